"""Moving schedules into takt and out of it: Kubernetes CronJobs, EventBridge Scheduler schedules
and crontabs become job bodies for `POST /v1/jobs`, and jobs become schedules and CronJobs again.

Pure functions of the source text (and, where a source's meaning depends on it, of `now`): the
CLI reads files and calls the API; nothing here touches the network. Each source item maps to an
`Imported`: a job body, or a refusal that says why, plus notes on what maps only approximately.
See docs/SCHEDULES.md ("Moving in and out").
"""

from takt_cli.migrate.model import Exported, Imported, MappingError

__all__ = ["Exported", "Imported", "MappingError"]
