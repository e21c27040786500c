"""The worker function: consumes the lanes, one execution per message, partial batch failures.

A message whose processing raises (an AWS error, not a target failure) is reported as a batch item
failure and comes back after its visibility timeout; target failures are outcomes, recorded on
the execution, and the message is consumed.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from takt.dispatch.lanes import LaneMessage
from takt.observability import MetricUnit, logger, metrics, tracer
from takt.wiring import services

processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> str:
    message = LaneMessage.model_validate_json(record.body)
    outcome = services().runner.process(message)
    logger.info(
        "execution processed",
        execution_id=outcome.execution_id,
        state=outcome.state,
        detail=outcome.detail,
    )
    if outcome.lag_ms is not None and outcome.state in (
        "succeeded",
        "failed",
        "dead",
        "retry_wait",
    ):
        metrics.add_metric("ScheduleLag", MetricUnit.Milliseconds, outcome.lag_ms)
    metric = {
        "succeeded": "Succeeded",
        "failed": "Failed",
        "dead": "Dead",
        "retry_wait": "Retried",
        "fenced": "StaleReportFenced",
    }.get(outcome.state)
    if metric:
        metrics.add_metric(metric, MetricUnit.Count, 1)
    return outcome.state


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> Any:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
