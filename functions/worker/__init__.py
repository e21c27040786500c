"""The worker function's code asset."""
