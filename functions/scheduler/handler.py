"""The per-second scheduler driver.

EventBridge invokes it once a minute; it ticks once per second inside the invocation until the
minute is over (or `ticks` is reached), fanning out one claim per (minute bucket, shard).
The local runtime invokes it every second with `{"ticks": 1}`.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from takt.observability import MetricUnit, add_metric, logger, metrics, tracer
from takt.wiring import services

# Leave the last seconds of a minute-long invocation to the next one.
STOP_BEFORE_END_MS = 3000


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    svc = services()
    ticks = int(event.get("ticks", 60))
    done = 0
    dispatched = 0
    while done < ticks:
        result = svc.ticker.tick(svc.clock.now())
        done += 1
        dispatched += result.total.dispatched
        if result.total.due:
            logger.info(
                "tick",
                due=result.total.due,
                dispatched=result.total.dispatched,
                skipped=result.total.skipped,
            )
        add_metric("Dispatched", MetricUnit.Count, result.total.dispatched)
        add_metric("Skipped", MetricUnit.Count, result.total.skipped)
        if result.total.lags_ms:
            # One value per tick: a burst of a million would otherwise be a million values.
            add_metric("DispatchLag", MetricUnit.Milliseconds, max(result.total.lags_ms))
        if done >= ticks or context.get_remaining_time_in_millis() < STOP_BEFORE_END_MS:
            break
        # Sleep to the next whole second, so ticks stay aligned with due times.
        time.sleep(1 - (time.time() % 1))
    return {"ticks": done, "dispatched": dispatched}
