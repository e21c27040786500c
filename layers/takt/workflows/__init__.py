"""DAG workflows: a job whose body has `tasks` instead of one target (docs/WORKFLOWS.md).

`model` validates a task list; `store` keeps a run's task items; `engine` starts runs, advances
them as tasks end, backs them up from the watchdog, and re-runs the failed part of a run.
"""
