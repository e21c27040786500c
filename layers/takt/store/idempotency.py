"""Idempotency records for job creation (DESIGN invariant 6).

The record is written first, with the job id chosen up front, so a client retry after a crash
finds the record and finishes creating the same job instead of making a second one. The
transaction that stores the job marks the record `done` (`done_item`), so a record outlives its
job: a retry after the job was deleted is told so (410) instead of bringing the job back. A create
reads the record (`find`) before it takes any tenant limit, so a retry of a create that succeeded
is answered as the first try was, whatever the limits say now (docs/SECURITY.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.store.errors import condition_failure_item, is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class IdempotencyRecord:
    """A claimed key: the job it is for, the body it came with, and whether the job was
    stored (False: the create that claimed it has not finished, or crashed)."""

    job_id: str
    body_hash: str
    done: bool = False


def _record(item: dict[str, Any]) -> IdempotencyRecord:
    return IdempotencyRecord(
        item["job_id"]["S"], item["body_hash"]["S"], bool(item.get("done", {}).get("BOOL"))
    )


class IdempotencyStore:
    def __init__(self, client: DynamoDBClient, table: str, retention_sec: int) -> None:
        self._db = client
        self._table = table
        self._retention_sec = retention_sec

    def find(self, tenant_id: str, key: str, now_epoch: int) -> IdempotencyRecord | None:
        """The live record of `key`, read without writing anything; None when there is none or
        it has expired (as `claim` treats it)."""
        resp = self._db.get_item(
            TableName=self._table,
            Key={"id": {"S": f"{tenant_id}#{key}"}},
            ConsistentRead=True,
        )
        item = resp.get("Item")
        if not item or int(item["expires_at"]["N"]) < now_epoch:
            return None
        return _record(dict(item))

    def done_item(self, tenant_id: str, key: str, job_id: str) -> dict[str, Any]:
        """The transaction item that marks `key` done, written with the job it is for; its
        condition fails when the key no longer names that job."""
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"id": {"S": f"{tenant_id}#{key}"}},
                "UpdateExpression": "SET done = :done",
                "ConditionExpression": "job_id = :job",
                "ExpressionAttributeValues": {":done": {"BOOL": True}, ":job": {"S": job_id}},
            }
        }

    def release(self, tenant_id: str, key: str, job_id: str) -> None:
        """Give back `key`, claimed for `job_id` by a create that was then refused (a tenant
        limit), so the refused request leaves nothing behind; a key since claimed otherwise
        stays."""
        try:
            self._db.delete_item(
                TableName=self._table,
                Key={"id": {"S": f"{tenant_id}#{key}"}},
                ConditionExpression="job_id = :job",
                ExpressionAttributeValues={":job": {"S": job_id}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def claim(
        self, tenant_id: str, key: str, job_id: str, body_hash: str, now_epoch: int
    ) -> IdempotencyRecord | None:
        """Reserve `key` for `job_id`; returns the existing record when the key is taken."""
        try:
            self._db.put_item(
                TableName=self._table,
                Item={
                    "id": {"S": f"{tenant_id}#{key}"},
                    "job_id": {"S": job_id},
                    "body_hash": {"S": body_hash},
                    "expires_at": {"N": str(now_epoch + self._retention_sec)},
                },
                # A record past its expiry is treated as absent even before TTL deletes it
                # (TTL deletion is lazy, and moto never does it).
                ConditionExpression="attribute_not_exists(id) OR expires_at < :now",
                ExpressionAttributeValues={":now": {"N": str(now_epoch)}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return _record(dict(condition_failure_item(exc) or {}))
        return None
