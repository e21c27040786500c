"""The per-tenant cap on running executions: a set of execution ids, one item per tenant.

A slot is the execution's own id in the tenant's `running` item, added by a conditional update
(`size(ids) < cap`, or the id is already there) and removed by another. Because the set holds
ids rather than a count, every step is idempotent: a duplicate message or a retried release
cannot count an execution twice or free a slot that someone else holds, and an execution that
took its slot and then crashed before its lease finds its own slot again when its message comes
back. What can still drift is an id left behind by a worker that died between its completion
and the release. The runner calls `repair` when a tenant's cap looks full, at most every
`REPAIR_EVERY_SEC` per tenant and process: a member whose execution is not running is only a
suspect the first time (it may be between its acquire and its lease, a few milliseconds), and is
freed when a later repair finds it still not running. A leaked slot is so freed within twice
that interval of being needed, and a slot in use is never freed by a repair.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.store.errors import is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

COUNTER = "running"
REPAIR_EVERY_SEC = 30.0


class RunningSlots:
    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = client
        self._table = table
        self._monotonic = monotonic
        self._repaired: dict[str, float] = {}
        self._suspects: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def acquire(self, tenant_id: str, execution_id: str, cap: int) -> bool:
        """Take a slot for `execution_id`; False when the tenant already runs `cap` others."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key=_key(tenant_id),
                UpdateExpression="ADD ids :one",
                ConditionExpression=(
                    "attribute_not_exists(ids) OR size(ids) < :cap OR contains(ids, :id)"
                ),
                ExpressionAttributeValues={
                    ":one": {"SS": [execution_id]},
                    ":cap": {"N": str(cap)},
                    ":id": {"S": execution_id},
                },
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def release(self, tenant_id: str, execution_id: str) -> None:
        """Free the slot of `execution_id`; nothing happens when it holds none."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key=_key(tenant_id),
                UpdateExpression="DELETE ids :one",
                ConditionExpression="contains(ids, :id)",
                ExpressionAttributeValues={
                    ":one": {"SS": [execution_id]},
                    ":id": {"S": execution_id},
                },
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def holders(self, tenant_id: str) -> set[str]:
        """The execution ids holding a slot of `tenant_id` now."""
        resp = self._db.get_item(TableName=self._table, Key=_key(tenant_id), ConsistentRead=True)
        item: dict[str, Any] = dict(resp.get("Item") or {})
        return set(item.get("ids", {}).get("SS", []))

    def repair_due(self, tenant_id: str) -> bool:
        """Whether this process should look for leaked slots of `tenant_id` now."""
        now = self._monotonic()
        with self._lock:
            last = self._repaired.get(tenant_id)
            if last is not None and now - last < REPAIR_EVERY_SEC:
                return False
            self._repaired[tenant_id] = now
            return True

    def repair(self, tenant_id: str, running: Callable[[str], bool]) -> int:
        """Free the slots whose execution was not running at the last repair and still is not
        (`running` reads it); how many were freed."""
        idle = {e for e in self.holders(tenant_id) if not running(e)}
        with self._lock:
            earlier = self._suspects.get(tenant_id, set())
            self._suspects[tenant_id] = idle - earlier
        for execution_id in idle & earlier:
            self.release(tenant_id, execution_id)
        return len(idle & earlier)


def _key(tenant_id: str) -> dict[str, Any]:
    return {"tenant_id": {"S": tenant_id}, "counter": {"S": COUNTER}}
