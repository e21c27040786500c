"""The api function's code asset."""
