"""What an execution calls: the target kinds and how their answers map to outcomes."""
