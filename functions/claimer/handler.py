"""One claim: dispatch what is due in one (minute bucket, shard) of the due index.

A claim in a region that does not hold the region lease (issue 27) is answered `fenced`, not
raised: it wrote nothing, and an error would have Lambda retry the asynchronous invocation and
count it as the function failing, while the region is only standing by.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from takt.models.ids import parse_time
from takt.models.regions import Fenced
from takt.observability import MetricUnit, add_metric, logger, metrics, tracer
from takt.wiring import services


class ClaimEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    minute: str
    shard: int
    # How many partitions of the minute the tick claims (takt.dispatch.ticker.ClaimTask).
    partitions: int | None = Field(default=None, ge=1)


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = ClaimEvent.model_validate(event)
    claiming = services().claimer_function
    try:
        result = claiming.claimer.claim(
            parse_time(task.minute), task.shard, claiming.clock.now(), task.partitions
        )
    except Fenced as fenced:
        logger.warning("claim fenced: this region does not hold the region lease", why=str(fenced))
        return {"due": 0, "dispatched": 0, "left": 0, "fenced": True}
    if result.due:
        logger.info(
            "claim",
            minute=task.minute,
            shard=task.shard,
            due=result.due,
            dispatched=result.dispatched,
            skipped=result.skipped,
        )
    add_metric("Dispatched", MetricUnit.Count, result.dispatched)
    add_metric("Skipped", MetricUnit.Count, result.skipped)
    if result.lags_ms:
        # In Lambda fan-out mode the claimer alone sees the lag (the scheduler only invokes it);
        # one value per claim, as the inline scheduler records one per tick.
        add_metric("DispatchLag", MetricUnit.Milliseconds, max(result.lags_ms))
    return {"due": result.due, "dispatched": result.dispatched, "left": result.left}
