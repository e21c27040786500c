"""The overview behind `GET /v1/stats`, read from where each number already lives.

- Job counts and failing jobs: the caller's rows of the jobs table (only the outline attributes,
  so thousands of jobs fit in one page), up to `JOB_READ_LIMIT` jobs a call.
- Dead and failed executions: counts of the caller's partitions of the `attention` index.
- Lane depths: SQS GetQueueAttributes on every lane and its dead-letter queue.
- Throughput and lag per minute: the metrics the handlers publish, from `Api.metrics`
  (CloudWatch in the cloud, the in-memory window under `takt local`), so the console, `takt top`
  and the CloudWatch alarms agree. Recomputing them from the executions table would need a read
  of every execution of the hour, and would be a second definition of the same numbers.
  Each count is one per execution (ended, dispatched) or one per attempt (retried), as the
  models' field descriptions say, and `metrics_since` names the first instant they cover.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from takt.api.dependencies import Api
from takt.api.models import (
    FailingJobOut,
    JobCountsOut,
    LaneOut,
    MinuteOut,
    StatsOut,
    TotalsOut,
)
from takt.models.ids import format_time, parse_time
from takt.models.records import ExecState, JobStatus
from takt.stats import MetricQuery
from takt.stats.base import MINUTE_SEC
from takt.store.executions import ATTENTION_STATES
from takt.store.jobs import JobOutline

WINDOW_MINUTES = 60
JOB_READ_LIMIT = 10_000
"""Jobs read for the counts per call: a bounded cost (a few MB) however large a tenant grows."""
FAILING_JOBS_SHOWN = 10
_EPOCH = datetime.fromtimestamp(0, UTC)

COUNTED = {
    "dispatched": "Dispatched",
    "succeeded": "Succeeded",
    "failed": "Failed",
    "dead": "Dead",
    "retried": "Retried",
    "skipped": "Skipped",
    "lease_expired": "LeaseExpired",
    "pending_resent": "PendingResent",
    "retries_released": "RetriesReleased",
    "stale_reports_fenced": "StaleReportFenced",
}
"""Totals key -> metric name (the names of infra/metric_names.py), each summed per minute."""

QUERIES = [
    *(MetricQuery(key, metric, "Sum") for key, metric in COUNTED.items()),
    MetricQuery("lag_p50_ms", "ScheduleLag", "p50"),
    MetricQuery("lag_p99_ms", "ScheduleLag", "p99"),
    MetricQuery("lag_max_ms", "ScheduleLag", "Maximum"),
    MetricQuery("dispatch_lag_max_ms", "DispatchLag", "Maximum"),
]


def window_start(now: datetime) -> datetime:
    """The first minute of the window that ends with the minute in progress."""
    minute = now.replace(second=0, microsecond=0)
    return minute - timedelta(minutes=WINDOW_MINUTES - 1)


class StatsService:
    def __init__(self, api: Api) -> None:
        self._api = api

    def overview(self, tenant_id: str) -> StatsOut:
        now = self._api.clock.now()
        data = self._api.tenant(tenant_id)
        outlines, complete = data.jobs.outlines(tenant_id, limit=JOB_READ_LIMIT)
        executions = data.executions
        attention = {
            state: executions.count_needing_attention(tenant_id, state)
            for state in ATTENTION_STATES
        }
        start = window_start(now)
        reader = self._api.metrics()
        series = reader.minutely(QUERIES, start, WINDOW_MINUTES)
        began = reader.since()
        return StatsOut(
            generated_at=format_time(now),
            window_minutes=WINDOW_MINUTES,
            metrics_since=format_time(start if began is None else max(start, began)),
            jobs=_counts(outlines, complete),
            failing_jobs=_failing(outlines),
            dead_executions=attention[ExecState.DEAD],
            failed_executions=attention[ExecState.FAILED],
            lanes=[
                LaneOut(
                    lane=d.lane,
                    waiting=d.waiting,
                    in_flight=d.in_flight,
                    delayed=d.delayed,
                    dead_letter=d.dead_letter,
                )
                for d in self._api.lane_depths()
            ],
            minutes=[_minute(series, start, i) for i in range(WINDOW_MINUTES)],
            totals=TotalsOut.model_validate(
                {key: int(sum(v or 0 for v in series[key])) for key in COUNTED}
            ),
        )


def _minute(series: dict[str, list[float | None]], start: datetime, i: int) -> MinuteOut:
    def count(key: str) -> int:
        return int(series[key][i] or 0)

    return MinuteOut(
        minute=format_time(start + timedelta(seconds=i * MINUTE_SEC)),
        dispatched=count("dispatched"),
        succeeded=count("succeeded"),
        failed=count("failed"),
        dead=count("dead"),
        retried=count("retried"),
        skipped=count("skipped"),
        lag_p50_ms=series["lag_p50_ms"][i],
        lag_p99_ms=series["lag_p99_ms"][i],
        lag_max_ms=series["lag_max_ms"][i],
        dispatch_lag_max_ms=series["dispatch_lag_max_ms"][i],
    )


def _counts(outlines: list[JobOutline], complete: bool) -> JobCountsOut:
    by_status = {status.value: 0 for status in JobStatus}
    for outline in outlines:
        by_status[outline.status] = by_status.get(outline.status, 0) + 1
    return JobCountsOut(
        active=by_status[JobStatus.ACTIVE.value],
        paused=by_status[JobStatus.PAUSED.value],
        completed=by_status[JobStatus.COMPLETED.value],
        total=len(outlines),
        complete=complete,
    )


def _failing(outlines: list[JobOutline]) -> list[FailingJobOut]:
    failing = [o for o in outlines if o.last_outcome in {state.value for state in ATTENTION_STATES}]
    failing.sort(key=lambda o: parse_time(o.last_run_at) if o.last_run_at else _EPOCH, reverse=True)
    return [
        FailingJobOut(
            id=o.job_id,
            name=o.name,
            status=o.status,
            last_outcome=o.last_outcome or "",
            last_run_at=o.last_run_at,
            last_execution_id=o.last_execution_id,
        )
        for o in failing[:FAILING_JOBS_SHOWN]
    ]
