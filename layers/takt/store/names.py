"""Job names, unique per tenant: a claim item per name in the tenants table.

A name is claimed with a conditional write before the job that takes it is written (create,
rename) and given back after the job lets it go (rename, delete), so two jobs of a tenant never
hold one name, whatever races. Its item, (`<tenant>`, `name#<name>`), holds the id of the job
that claimed it and when. A crash between the claim and the job's write leaves a claim for a job
that does not exist or has another name: such a claim is taken over, by a write conditional on
the stale holder, once it is older than `SETTLE_SEC`, long enough for the claiming request to
have written its job (an API call ends within 30 s) — so a claim in flight is never taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from takt.store.errors import condition_failure_item, is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SETTLE_SEC = 60
PREFIX = "name#"


class NameTakenError(Exception):
    """Another job of the tenant has the name (or is being created with it right now)."""

    def __init__(self, name: str, holder: str) -> None:
        super().__init__(f"the name {name!r} is taken by job {holder}")
        self.name = name
        self.holder = holder


class JobNames:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def claim(
        self, tenant_id: str, name: str, job_id: str, now_ms: int, holds: Callable[[str], bool]
    ) -> None:
        """Claim `name` for `job_id` (again, if it already holds it). `holds(job_id)` says
        whether that job exists with this name now; a claim whose holder does not is stale."""
        try:
            self._db.put_item(
                TableName=self._table,
                Item={**self._key(tenant_id, name), **_holder(job_id, now_ms)},
                ConditionExpression="attribute_not_exists(job_id) OR job_id = :me",
                ExpressionAttributeValues={":me": {"S": job_id}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            old = condition_failure_item(exc) or {}
        holder = str(old.get("job_id", {}).get("S", ""))
        claimed_ms = int(old.get("claimed_ms", {}).get("N", "0"))
        if holds(holder) or now_ms - claimed_ms < SETTLE_SEC * 1000:
            raise NameTakenError(name, holder)
        self._take_over(tenant_id, name, job_id, holder, now_ms)

    def release(self, tenant_id: str, name: str, job_id: str) -> None:
        """Give `name` back if `job_id` still holds it (a newer holder keeps it)."""
        try:
            self._db.delete_item(
                TableName=self._table,
                Key=self._key(tenant_id, name),
                ConditionExpression="job_id = :me",
                ExpressionAttributeValues={":me": {"S": job_id}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def _take_over(self, tenant_id: str, name: str, job_id: str, stale: str, now_ms: int) -> None:
        try:
            self._db.put_item(
                TableName=self._table,
                Item={**self._key(tenant_id, name), **_holder(job_id, now_ms)},
                ConditionExpression="job_id = :stale",
                ExpressionAttributeValues={":stale": {"S": stale}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            raise NameTakenError(name, "another request") from None

    @staticmethod
    def _key(tenant_id: str, name: str) -> dict[str, dict[str, str]]:
        return {"tenant_id": {"S": tenant_id}, "counter": {"S": PREFIX + name}}


def _holder(job_id: str, now_ms: int) -> dict[str, dict[str, str]]:
    return {"job_id": {"S": job_id}, "claimed_ms": {"N": str(now_ms)}}
