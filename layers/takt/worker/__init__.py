"""Workers: take a lease on an execution, run its target, and complete it, fenced."""
