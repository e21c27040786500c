"""Token buckets shared by every function, one DynamoDB item each, in the tenants table.

A bucket is kept as GCRA (the generic cell rate algorithm): one number, the theoretical arrival
time `tat` of the next token, instead of a token count and a refill time. A bucket of `rate`
tokens a second and `burst` deep grants a token at `now` when `tat - now` is at most
`burst / rate` ahead, and each token granted moves `tat` on by `1 / rate`. One conditional
update on the old `tat` (the bucket's version) takes any number of tokens at once, so a send
batch costs one write per tenant, not one per message, and two writers can never both spend the
same tokens: the loser's condition fails and it tries again from the value DynamoDB returns.

Each process remembers the last `tat` it saw. `tat` only moves forward, so a remembered value
is never ahead of the real one: a bucket it finds empty is empty, and a stale value costs one
failed write, which returns the current item.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.store.errors import condition_failure_item, is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MAX_TRIES = 5
_US = 1_000_000


@dataclass(frozen=True)
class Grant:
    """How many tokens were granted, and (when none were) how long until the next one is due."""

    granted: int
    retry_after_sec: float = 0.0


def gcra(tat_us: int, now_us: int, want: int, rate: float, burst: int) -> tuple[int, int, float]:
    """(tokens granted, the bucket's next `tat`, seconds until a token when none was granted).

    A pure function of the bucket's state, so the arithmetic is tested without a table.
    """
    interval = _US / rate
    start = max(tat_us, now_us)
    available = math.floor((now_us + burst * interval - start) / interval + 1e-9)
    granted = max(0, min(want, available))
    if granted:
        return granted, math.ceil(start + granted * interval), 0.0
    wait_us = start + interval - burst * interval - now_us
    return 0, tat_us, max(0.0, wait_us / _US)


class TokenBuckets:
    """Buckets as items (`tenant_id`, `counter`) of the tenants table, attribute `tat_us`."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table
        self._seen: dict[tuple[str, str], int | None] = {}

    def take(
        self, partition: str, counter: str, want: int, rate: float, burst: int, now: datetime
    ) -> Grant:
        """Take up to `want` tokens from the bucket (`rate` a second, `burst` deep) at `now`."""
        key = (partition, counter)
        now_us = int(now.timestamp() * _US)
        for _ in range(MAX_TRIES):
            if key not in self._seen:
                self._seen[key] = self._read(partition, counter)
            known = self._seen[key]
            granted, tat_us, wait = gcra(known or 0, now_us, want, rate, burst)
            if not granted:
                return Grant(0, wait)
            try:
                self._write(partition, counter, known, tat_us)
            except ClientError as exc:
                if not is_condition_failure(exc):
                    raise
                current = condition_failure_item(exc)
                self._seen[key] = _tat(current) if current else None
                continue
            self._seen[key] = tat_us
            return Grant(granted)
        # Every try lost to another writer: the bucket is being drained faster than we can
        # read it, which is what an empty bucket means to this caller.
        return Grant(0, 1 / rate)

    def _read(self, partition: str, counter: str) -> int | None:
        resp = self._db.get_item(
            TableName=self._table,
            Key=_key(partition, counter),
            ConsistentRead=True,
        )
        item = resp.get("Item")
        return _tat(dict(item)) if item else None

    def _write(self, partition: str, counter: str, known: int | None, tat_us: int) -> None:
        values: dict[str, Any] = {":new": {"N": str(tat_us)}}
        if known is None:
            condition = "attribute_not_exists(tat_us)"
        else:
            condition = "tat_us = :old"
            values[":old"] = {"N": str(known)}
        self._db.update_item(
            TableName=self._table,
            Key=_key(partition, counter),
            UpdateExpression="SET tat_us = :new",
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )


def _key(partition: str, counter: str) -> dict[str, Any]:
    return {"tenant_id": {"S": partition}, "counter": {"S": counter}}


def _tat(item: dict[str, Any]) -> int | None:
    value = item.get("tat_us")
    return int(value["N"]) if value else None
