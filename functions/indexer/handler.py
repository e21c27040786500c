"""The due indexer function: the jobs table's stream to the due index.

Lambda reads the stream in order per job and retries a batch from the first record this
function reports failed (partial batch responses by sequence number), bisecting a batch that
keeps failing. Only a transient error fails a record: one that cannot be indexed is parked in
quarantine and the batch goes on. A record that still fails after the retries goes to the
on-failure destination (a queue an alarm watches), as the stack configures, and its job stays
marked unindexed for the reconciler. Which records index what: `takt.dispatch.indexer`.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from takt.observability import logger, metrics, tracer
from takt.wiring import services

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def record_handler(record: DynamoDBRecord) -> bool:
    return services().indexer.index(record.raw_event)


@logger.inject_lambda_context
# A record parked in quarantine counts `Quarantined` (takt.store.quarantine).
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> Any:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
