"""Runnable examples of takt's public modules (see examples/README.md)."""
