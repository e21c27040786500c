"""The watchdog: puts back executions whose worker died or whose message was lost."""
