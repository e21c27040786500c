"""The worker function: consumes the lanes, one execution per message, the batch's messages run
at once, partial batch failures.

A message whose processing raises (an AWS error, not a target failure) is reported as a batch item
failure and comes back after its visibility timeout; target failures are outcomes, recorded on
the execution, and the message is consumed.

The function serves the registered handlers of `TAKT_HANDLER_MODULES`; a message for any other
handler is sent back for a worker that serves it. An execution still running when the function
nears its own timeout (`TAKT_GIVE_BACK_MARGIN_SEC` before it) is given back with a fresh message,
at the same attempt, rather than left for the watchdog to find after its lease.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from aws_lambda_powertools.utilities.batch import EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from takt.models.lanes import LaneMessage
from takt.observability import add_metric, log_keys, logger, metrics, tracer
from takt.wiring import services
from takt.worker.batch import ConcurrentBatchProcessor
from takt.worker.deadline import HostDeadline
from takt.worker.metrics import Emit, InvocationMetrics, log_outcome, record_outcome


def record_handler(
    record: SQSRecord, lambda_context: LambdaContext | None = None, emit: Emit = add_metric
) -> str:
    """Run one message. Its one line (`log_outcome`) is at DEBUG when the run went as planned,
    so only sampled invocations keep it, and at WARNING when it failed (the runner logs only
    what went wrong); `emit` takes its metrics: the handler passes the invocation's
    `InvocationMetrics`, so they are emitted once, and counted in one INFO line, for the whole
    batch."""
    message = LaneMessage.model_validate_json(record.body)
    worker = services().worker_function
    host = None
    if lambda_context is not None:
        left = lambda_context.get_remaining_time_in_millis() / 1000
        host = HostDeadline.after(left - worker.give_back_margin_sec)
    # Every line logged while this message is processed (the runner's and the target's too)
    # names the execution, so one query of the logs finds an execution's whole story.
    with log_keys(
        job_id=message.job_id, execution_id=message.execution_id, attempt=message.attempt
    ):
        # Only in the sampled invocations (POWERTOOLS_LOGGER_SAMPLE_RATE): when a run started.
        logger.debug("execution received")
        outcome = worker.runner.process(message, host=host)
        log_outcome(outcome)
    record_outcome(outcome, emit)
    return outcome.state


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> Any:
    # A processor per invocation: it keeps the batch's successes and failures on itself, and the
    # local runtime calls this handler from several lane pollers at once. The batch's messages
    # run side by side, so none waits for another's call (takt.worker.batch).
    processor = ConcurrentBatchProcessor(
        event_type=EventType.SQS, concurrency=services().worker_function.batch_concurrency
    )
    collected = InvocationMetrics()
    try:
        return process_partial_response(
            event=event,
            record_handler=partial(record_handler, emit=collected.add),
            processor=processor,
            context=context,
        )
    finally:
        # The batch's one INFO line: its runs counted by outcome (a success is only at DEBUG).
        counts = {"messages": len(event.get("Records", [])), **collected.counts()}
        logger.info("batch processed", extra=counts)
        collected.emit_into(add_metric)
