"""The region lease: which one region of a multi-region deployment may dispatch, and when."""
