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


@dataclass(frozen=True)
class MetricName:
    """One metric: its name, the Powertools `MetricUnit` it is emitted with, and its emitter."""

    name: str
    unit: str
    emitted_by: str


SCHEDULE_LAG = MetricName("ScheduleLag", "Milliseconds", "worker")
DISPATCH_LAG = MetricName("DispatchLag", "Milliseconds", "scheduler")
DISPATCHED = MetricName("Dispatched", "Count", "claimer")
SKIPPED = MetricName("Skipped", "Count", "claimer")
SUCCEEDED = MetricName("Succeeded", "Count", "worker")
FAILED = MetricName("Failed", "Count", "worker")
# The watchdog counts the executions whose lease expired on their last attempt.
DEAD = MetricName("Dead", "Count", "worker, watchdog")
RETRIED = MetricName("Retried", "Count", "worker")
STALE_REPORT_FENCED = MetricName("StaleReportFenced", "Count", "worker")
LEASE_EXPIRED = MetricName("LeaseExpired", "Count", "watchdog")
PENDING_RESENT = MetricName("PendingResent", "Count", "watchdog")
RETRIES_RELEASED = MetricName("RetriesReleased", "Count", "watchdog")

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
    LEASE_EXPIRED,
    PENDING_RESENT,
    RETRIES_RELEASED,
)
