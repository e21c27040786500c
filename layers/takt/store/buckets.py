"""Token buckets shared by every function, one DynamoDB item each, in the tenants table.

A bucket is kept as GCRA (the generic cell rate algorithm): one number, the theoretical arrival
time `tat` of the next token, instead of a token count and a refill time. A bucket of `rate`
tokens a second and `burst` deep grants a token at `now` when `tat - now` is at most
`burst / rate` ahead, and each token granted moves `tat` on by `1 / rate`. One conditional
update takes any number of tokens at once, so a send batch costs one write per tenant, not one
per message. It has two forms:

- a bucket in use (`tat` at or after `now`) is charged with an atomic add, `tat = tat + cost`,
  on the condition that `tat` is still at most where the bucket would hold the tokens
  (`now + (burst - granted) / rate`). Writers racing on it do not fail each other's condition:
  requests that arrive together under the limit all pass, and the condition keeps their total
  within the burst;
- an idle bucket (no `tat`, or one before `now`, so full) is set from `now`, on the condition
  that it is still idle. Of writers racing on an idle bucket one sets it; the others' condition
  fails, returns the item, and they take their tokens with the add.

A lost condition returns the item as it is, and the writer tries again from it (at most
MAX_TRIES times; each loss means another writer moved the bucket from idle to in use or spent
its last tokens, so a second try almost always settles it).

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


def latest_tat(now_us: int, granted: int, rate: float, burst: int) -> int:
    """The latest `tat` at which the bucket still holds `granted` tokens at `now_us` (`gcra`'s
    test solved for `tat`): the condition of the add that takes them from a bucket in use."""
    return math.floor(now_us + (burst - granted + 1e-9) * (_US / rate))


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
                limit_us = latest_tat(now_us, granted, rate, burst)
                self._seen[key] = self._spend(partition, counter, known, tat_us, now_us, limit_us)
            except ClientError as exc:
                if not is_condition_failure(exc):
                    raise
                current = condition_failure_item(exc)
                self._seen[key] = _tat(current) if current else None
                continue
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

    def _spend(
        self,
        partition: str,
        counter: str,
        known: int | None,
        tat_us: int,
        now_us: int,
        limit_us: int,
    ) -> int:
        """Write the bucket's new `tat` (the module's two forms) and return it as stored."""
        if known is None or known <= now_us:
            update = "SET tat_us = :new"
            condition = "attribute_not_exists(tat_us) OR tat_us <= :now"
            values: dict[str, Any] = {":new": {"N": str(tat_us)}, ":now": {"N": str(now_us)}}
        else:
            update = "SET tat_us = tat_us + :cost"
            condition = "tat_us >= :now AND tat_us <= :limit"
            values = {
                ":cost": {"N": str(tat_us - known)},
                ":now": {"N": str(now_us)},
                ":limit": {"N": str(limit_us)},
            }
        resp = self._db.update_item(
            TableName=self._table,
            Key=_key(partition, counter),
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
            ReturnValues="UPDATED_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return int(resp["Attributes"]["tat_us"]["N"])


def _key(partition: str, counter: str) -> dict[str, Any]:
    return {"tenant_id": {"S": partition}, "counter": {"S": counter}}


def _tat(item: dict[str, Any]) -> int | None:
    value = item.get("tat_us")
    return int(value["N"]) if value else None
