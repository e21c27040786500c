"""The due indexer function's code asset."""
