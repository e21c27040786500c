"""Dispatch: the per-second ticker, the claimers it fans out, and the SQS priority lanes."""
