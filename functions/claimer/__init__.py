"""The claimer function's code asset."""
