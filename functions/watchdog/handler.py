"""The watchdog function: sweeps the open-executions index every interval for about a minute.

It is invoked once a minute, so it also takes the minute's scale-ahead step first
(`takt.dispatch.ahead`): count what falls due in the next minutes and size the Fargate worker
service and the provisioned tables' write capacity for it. A failure there is logged and the
sweeps go on: a late fleet delays runs, a late table throttles writes (retried), an unswept
lease loses none but delays its recovery.

The reconciler (`takt.dispatch.reconciler`) also runs once an invocation, first: it repairs the
due items of jobs the indexer did not index.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from takt.clock import Clock
from takt.dispatch.ahead import ScaleAhead
from takt.observability import MetricUnit, add_counts, add_metric, logger, metrics, tracer
from takt.watchdog.sweeper import SweepResult
from takt.wiring import services

STOP_BEFORE_END_MS = 5000


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    sweeping = services().watchdog_function
    if sweeping.scale_ahead is not None:
        _scale_ahead(sweeping.scale_ahead, sweeping.clock)
    sweeps = int(event.get("sweeps", 6))
    totals = {"resent": 0, "lease_expired": 0, "dead": 0, "retries_released": 0}
    if sweeping.reconciler is not None:
        # Once per invocation (a minute in the cloud): the markers it reads are minutes old.
        totals["reindexed"] = sweeping.reconciler.run(sweeping.clock.now()).repaired
    for done in range(1, sweeps + 1):
        result = sweeping.watchdog.sweep(sweeping.clock.now())
        totals["resent"] += result.resent
        totals["lease_expired"] += result.lease_expired
        totals["dead"] += result.dead
        totals["retries_released"] += result.retries_released
        record_sweep(result)
        remaining = context.get_remaining_time_in_millis()
        if done == sweeps or remaining < STOP_BEFORE_END_MS + sweeping.interval_sec * 1000:
            break
        time.sleep(sweeping.interval_sec)
    return totals


def record_sweep(result: SweepResult) -> None:
    """A sweep's counts as metrics; an idle sweep's zeros are not published (`add_counts`)."""
    add_counts(
        {
            "PendingResent": result.resent,
            "LeaseExpired": result.lease_expired,
            "RetriesReleased": result.retries_released,
            # An expired lease on the last attempt is a death too; without this the Dead series
            # (and the console's dead count per minute) would miss every worker that crashed.
            "Dead": result.dead,
        }
    )


def _scale_ahead(ahead: ScaleAhead, clock: Clock) -> None:
    try:
        result = ahead.step(clock.now())
    except (ClientError, BotoCoreError):
        logger.warning("scale-ahead step failed; sweeping anyway", exc_info=True)
        return
    add_metric("DueAhead", MetricUnit.Count, result.forecast.peak)
    add_metric("WorkerTasksAhead", MetricUnit.Count, result.tasks)
    for table in result.tables:
        if table.minimum != table.previous:
            logger.info(
                "table minimums set ahead of the due index",
                table=table.table,
                due_peak_minute=result.forecast.peak,
                write_minimum=table.minimum.write,
                read_minimum=table.minimum.read,
                previous_write=table.previous.write,
                previous_read=table.previous.read,
                capacity_lowered=table.lowered,
            )
    if result.previous_min is not None and result.previous_min != result.tasks:
        logger.info(
            "worker service minimum set ahead of the due index",
            due_peak_minute=result.forecast.peak,
            complete=result.forecast.complete,
            tasks=result.tasks,
            previous=result.previous_min,
        )
