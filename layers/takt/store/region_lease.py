"""The region lease's one item, in the `regions` table (`takt.resources.REGIONS`).

Every write is conditional and every read strongly consistent: in AWS the table is a
multi-Region strongly consistent (MRSC) global table, where both hold across the regions, so a
renewal or a take-over is a true compare-and-set between regions (docs/ARCHITECTURE.md,
"Regions"). Each write returns the item as written (or None when its condition failed), so the
fence never needs a read to learn what it just did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.models.regions import RegionLease
from takt.store.errors import NotFoundError, is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

LEASE_KEY = {"pk": {"S": "lease"}}


class RegionLeaseStore:
    """The lease item; `lease_ms` is written on each write as `ttl_ms`, for status readers."""

    def __init__(self, client: DynamoDBClient, table: str, lease_ms: int) -> None:
        self._db = client
        self._table = table
        self._lease_ms = lease_ms

    def read(self) -> RegionLease | None:
        """The lease as it is now (strongly consistent), or None before the first one."""
        resp = self._db.get_item(TableName=self._table, Key=LEASE_KEY, ConsistentRead=True)
        item = resp.get("Item")
        return None if item is None else _lease(item)

    def create(self, holder: str) -> RegionLease | None:
        """The first lease, `holder` at epoch 1; None when there is one already."""
        item = {
            **LEASE_KEY,
            "holder": {"S": holder},
            "epoch": {"N": "1"},
            "renewals": {"N": "0"},
            "ttl_ms": {"N": str(self._lease_ms)},
        }
        try:
            self._db.put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return _lease(item)

    def renew(self, holder: str, epoch: int) -> RegionLease | None:
        """One more renewal by `holder` at `epoch`; None when it no longer holds that epoch."""
        return self._update(
            "SET ttl_ms = :ttl ADD renewals :one",
            "holder = :me AND epoch = :epoch",
            {":me": {"S": holder}, ":epoch": {"N": str(epoch)}, ":one": {"N": "1"}},
        )

    def take_over(self, seen: RegionLease, holder: str) -> RegionLease | None:
        """`holder` at the next epoch, if the lease is still exactly `seen`; None otherwise."""
        return self._update(
            "SET holder = :me, epoch = :next, renewals = :zero, ttl_ms = :ttl",
            "holder = :was AND epoch = :epoch AND renewals = :renewals",
            {
                ":me": {"S": holder},
                ":next": {"N": str(seen.epoch + 1)},
                ":zero": {"N": "0"},
                ":was": {"S": seen.holder},
                ":epoch": {"N": str(seen.epoch)},
                ":renewals": {"N": str(seen.renewals)},
            },
        )

    def promote(self, holder: str) -> RegionLease:
        """Give the lease to `holder` at the next epoch, whoever holds it (an operator's move);
        NotFoundError before the first lease."""
        promoted = self._update(
            "SET holder = :me, renewals = :zero, ttl_ms = :ttl ADD epoch :one",
            "attribute_exists(pk)",
            {":me": {"S": holder}, ":zero": {"N": "0"}, ":one": {"N": "1"}},
        )
        if promoted is None:
            raise NotFoundError("no region lease yet: the first region's driver writes it")
        return promoted

    def _update(self, update: str, condition: str, values: dict[str, Any]) -> RegionLease | None:
        try:
            resp = self._db.update_item(
                TableName=self._table,
                Key=LEASE_KEY,
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues={**values, ":ttl": {"N": str(self._lease_ms)}},
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return _lease(resp["Attributes"])


def _lease(item: dict[str, Any]) -> RegionLease:
    return RegionLease(
        holder=item["holder"]["S"],
        epoch=int(item["epoch"]["N"]),
        renewals=int(item["renewals"]["N"]),
        ttl_ms=int(item["ttl_ms"]["N"]),
    )
