"""BatchGetItem and BatchWriteItem with what DynamoDB asks of their callers: at most BATCH_GET
keys (BATCH_WRITE items) a request, and the keys a throttled request left unread
(`UnprocessedKeys`) or the items it left unwritten (`UnprocessedItems`) sent again after a
backoff, not at once (AWS's guidance: retrying them immediately meets the same throttle)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# BatchGetItem's most keys per request, BatchWriteItem's most items, and the longest wait before
# asking again for the keys or items a throttled one left.
BATCH_GET = 100
BATCH_WRITE = 25
UNPROCESSED_BACKOFF_MAX_SEC = 2.0


def batch_get(
    db: DynamoDBClient,
    table: str,
    keys: Sequence[Mapping[str, Any]],
    **request: Any,
) -> Iterator[dict[str, Any]]:
    """Every item of `keys` that exists, in no set order. `request` is the rest of each
    request's table entry (`ConsistentRead`, `ProjectionExpression`, ...)."""
    pending = list(keys)
    tries = 0
    while pending:
        batch, pending = pending[:BATCH_GET], pending[BATCH_GET:]
        resp = db.batch_get_item(RequestItems={table: {"Keys": batch, **request}})  # type: ignore[dict-item]
        yield from resp.get("Responses", {}).get(table, [])
        unprocessed: Any = resp.get("UnprocessedKeys") or {}
        left = list(unprocessed.get(table, {}).get("Keys", []))
        if left:
            tries += 1
            time.sleep(min(UNPROCESSED_BACKOFF_MAX_SEC, 0.05 * 2**tries))
        pending = [*left, *pending]


def batch_put(db: DynamoDBClient, table: str, items: Sequence[Mapping[str, Any]]) -> None:
    """Put every item of `items`, unconditionally, BATCH_WRITE to a request: what `put_item`
    without a condition writes, at the same write units, in a call per BATCH_WRITE items. Each
    key must come once (DynamoDB refuses a request that names one twice)."""
    pending: list[Any] = [{"PutRequest": {"Item": item}} for item in items]
    tries = 0
    while pending:
        batch, pending = pending[:BATCH_WRITE], pending[BATCH_WRITE:]
        resp = db.batch_write_item(RequestItems={table: batch})
        unprocessed: Any = resp.get("UnprocessedItems") or {}
        left = list(unprocessed.get(table, []))
        if left:
            tries += 1
            time.sleep(min(UNPROCESSED_BACKOFF_MAX_SEC, 0.05 * 2**tries))
        pending = [*left, *pending]
