"""The watchdog function's code asset."""
