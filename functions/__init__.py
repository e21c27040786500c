"""Lambda handlers: thin adapters from AWS events to the takt library."""
