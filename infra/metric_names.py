"""The metrics takt's functions publish and its dashboard and alarms read.

The handlers emit these with Powertools Metrics (EMF) into NAMESPACE, with Powertools' single
default dimension `service` = SERVICE (POWERTOOLS_SERVICE_NAME, the same for every function, so a
metric is one CloudWatch series whichever function emitted it). The handlers cannot import this
module (infra is not shipped to Lambda), so docs/DEPLOY.md lists every name and a test keeps that
list in step with this one.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "takt"
SERVICE = "takt"
SERVICE_DIMENSION = "service"


# The code paths that serve a role: each must emit every metric of its role, since only one of
# them runs in a given deployment (tests/integration/worker/test_metric_paths.py runs each).
DISPATCH_PATHS = ("inline scheduler", "claimer")  # claimerMode inline / Lambda fan-out
WORKER_PATHS = ("worker function", "takt worker")  # the lanes' Lambda consumer / Fargate
WATCHDOG_PATHS = ("watchdog",)
FARGATE_PATHS = ("takt worker",)
SCALE_AHEAD_PATHS = ("watchdog scaling ahead",)  # the watchdog with a Fargate service to size


@dataclass(frozen=True)
class MetricName:
    """One metric: its name, the Powertools `MetricUnit` it is emitted with, its emitter as
    docs/DEPLOY.md names it, and the code paths that must emit it."""

    name: str
    unit: str
    emitted_by: str
    paths: tuple[str, ...]


SCHEDULE_LAG = MetricName("ScheduleLag", "Milliseconds", "worker", WORKER_PATHS)
DISPATCH_LAG = MetricName("DispatchLag", "Milliseconds", "claimer", DISPATCH_PATHS)
DISPATCHED = MetricName("Dispatched", "Count", "claimer", DISPATCH_PATHS)
SKIPPED = MetricName("Skipped", "Count", "claimer", DISPATCH_PATHS)
SUCCEEDED = MetricName("Succeeded", "Count", "worker", WORKER_PATHS)
FAILED = MetricName("Failed", "Count", "worker", WORKER_PATHS)
# The watchdog counts the executions whose lease expired on their last attempt.
DEAD = MetricName("Dead", "Count", "worker, watchdog", WORKER_PATHS + WATCHDOG_PATHS)
RETRIED = MetricName("Retried", "Count", "worker", WORKER_PATHS)
STALE_REPORT_FENCED = MetricName("StaleReportFenced", "Count", "worker", WORKER_PATHS)
# A worker whose lease expired on its own clock before a heartbeat succeeded: it stopped the
# call and wrote nothing (DESIGN invariant 10); the watchdog's LeaseExpired follows.
LEASE_LOST = MetricName("LeaseLost", "Count", "worker", WORKER_PATHS)
LEASE_EXPIRED = MetricName("LeaseExpired", "Count", "watchdog", WATCHDOG_PATHS)
PENDING_RESENT = MetricName("PendingResent", "Count", "watchdog", WATCHDOG_PATHS)
RETRIES_RELEASED = MetricName("RetriesReleased", "Count", "watchdog", WATCHDOG_PATHS)
# Records parked in quarantine (DESIGN invariant 9): emitted only when one is met, by whichever
# function met it, so no path is bound to emit it on every run.
QUARANTINED = MetricName("Quarantined", "Count", "claimer, watchdog, indexer, api", ())
# The Fargate service's autoscaling reads these (infra/worker_service.py).
WORKER_SLOTS_BUSY = MetricName("WorkerSlotsBusy", "Percent", "takt worker", FARGATE_PATHS)
DUE_AHEAD = MetricName("DueAhead", "Count", "watchdog", SCALE_AHEAD_PATHS)
WORKER_TASKS_AHEAD = MetricName("WorkerTasksAhead", "Count", "watchdog", SCALE_AHEAD_PATHS)

ALL: tuple[MetricName, ...] = (
    SCHEDULE_LAG,
    DISPATCH_LAG,
    DISPATCHED,
    SKIPPED,
    SUCCEEDED,
    FAILED,
    DEAD,
    RETRIED,
    STALE_REPORT_FENCED,
    LEASE_LOST,
    LEASE_EXPIRED,
    PENDING_RESENT,
    RETRIES_RELEASED,
    QUARANTINED,
    WORKER_SLOTS_BUSY,
    DUE_AHEAD,
    WORKER_TASKS_AHEAD,
)
