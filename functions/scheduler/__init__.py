"""The scheduler function's code asset."""
