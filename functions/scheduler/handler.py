"""The per-second scheduler driver.

EventBridge starts one driver a minute, and each runs for about two minutes (its timeout, set by
`infra/driver.py`), so two drivers are always running, a minute apart; each claims every second
and only the winner ticks (`takt.dispatch.driver`). A second delivery of a minute's event (the
rule delivers at least once) finds its start already claimed and returns at once.
The local runtime invokes it every second with `{"ticks": 1}`. With `driver_rest` (the small
profile) a driver ends early once nothing is due before the next minute's, and the indexer starts
one for a job due sooner (`takt.dispatch.rest`); such a start carries no `time`.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from takt.dispatch.driver import STOP_BEFORE_END_SEC
from takt.dispatch.ticker import TickResult
from takt.observability import MetricUnit, add_counts, add_metric, logger, metrics, tracer
from takt.wiring import services

STOP_BEFORE_END_MS = STOP_BEFORE_END_SEC * 1000


def record_tick(tick: TickResult) -> None:
    """A tick's counts as metrics; an idle tick's zeros are not published (`add_counts`)."""
    if tick.total.due:
        logger.info(
            "tick",
            due=tick.total.due,
            dispatched=tick.total.dispatched,
            skipped=tick.total.skipped,
        )
    add_counts({"Dispatched": tick.total.dispatched, "Skipped": tick.total.skipped})
    if tick.total.lags_ms:
        # One value per tick: a burst of a million would otherwise be a million values.
        add_metric("DispatchLag", MetricUnit.Milliseconds, max(tick.total.lags_ms))


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    scheduler = services().scheduler_function
    scheduled = event.get("time")
    if scheduled is not None and not scheduler.due.claim_start(datetime.fromisoformat(scheduled)):
        logger.info("a driver already started for this event", scheduled=scheduled)
        return {"seconds": 0, "ticks": 0, "dispatched": 0}
    ticks = event.get("ticks")
    rest = scheduler.rest
    rested = False

    def on_tick(tick: TickResult) -> None:
        nonlocal rested
        record_tick(tick)
        if rest is None:
            return
        try:
            rested = rest.settles(scheduler.clock.now(), tick.watermark)
        except (ClientError, BotoCoreError):
            # Not resting costs a second of ticking; ending on the error would stop dispatch.
            logger.warning("the driver could not settle its rest: it ticks on", exc_info=True)

    result = scheduler.driver.run(
        keep_going=lambda: (
            not rested and context.get_remaining_time_in_millis() >= STOP_BEFORE_END_MS
        ),
        wait=time.sleep,
        ticks=None if ticks is None else int(ticks),
        on_tick=on_tick,
    )
    if rested:
        logger.info("the driver rests: nothing is due before the next minute's driver")
    return {"seconds": result.seconds, "ticks": result.ticks, "dispatched": result.dispatched}
