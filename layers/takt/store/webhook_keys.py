"""Each tenant's webhook key generation, one item in the tenants table (`takt.tenants.webhook_keys`
derives the keys from it and the deployment's master secret)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.store.errors import is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEY_ITEM = "webhook-key"


@dataclass(frozen=True)
class KeyState:
    """What the tenants table holds for a tenant: nothing at all means generation 0."""

    generation: int = 0
    previous_until_ms: int | None = None
    # Whether the item exists: a rotation's write is conditional on what it read.
    stored: bool = False


class KeyStates:
    """Reads a tenant's key state, and moves it on by one generation."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def read(self, tenant_id: str) -> KeyState:
        item = self._db.get_item(
            TableName=self._table, Key=_key(tenant_id), ConsistentRead=True
        ).get("Item")
        if not item:
            return KeyState()
        until = item.get("previous_until_ms")
        return KeyState(
            generation=int(item["generation"]["N"]),
            previous_until_ms=int(until["N"]) if until else None,
            stored=True,
        )

    def advance(self, tenant_id: str, state: KeyState, previous_until_ms: int) -> bool:
        """Move to the next generation if the item is still as `state` (False: it moved on), the
        one it had valid until `previous_until_ms`."""
        values: dict[str, Any] = {
            ":next": {"N": str(state.generation + 1)},
            ":until": {"N": str(previous_until_ms)},
        }
        if state.stored:
            condition = "generation = :old"
            values[":old"] = {"N": str(state.generation)}
        else:
            condition = "attribute_not_exists(generation)"
        try:
            self._db.update_item(
                TableName=self._table,
                Key=_key(tenant_id),
                UpdateExpression="SET generation = :next, previous_until_ms = :until",
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return False
        return True


def _key(tenant_id: str) -> dict[str, Any]:
    return {"tenant_id": {"S": tenant_id}, "counter": {"S": KEY_ITEM}}
