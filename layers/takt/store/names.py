"""Job names, unique per tenant: a claim item per name in the tenants table.

A name is claimed with a conditional write before the job that takes it is written (create,
rename) and given back after the job lets it go (rename, delete), so two jobs of a tenant never
hold one name, whatever races. Its item, (`<tenant>`, `name#<name>`), holds the id of the job
that claimed it and when. A crash between the claim and the job's write leaves a claim for a job
that does not exist or has another name: such a claim is taken over, by a write conditional on
the stale holder, once it is older than `SETTLE_SEC`, long enough for the claiming request to
have written its job (an API call ends within 30 s) — so a claim in flight is never taken.

A deleted job leaves a record of the name it had, (`<tenant>`,
`former#<name><US><deleted ms>#<job id>`), for as long as its history is kept: its executions
expire at most that long after the delete, so a name finds the deleted job's history while there
is any, newest deletion first, and a new job of that name is never hidden by it. A name holds no
control character (the API refuses one), so the unit separator (US) ends it in the key, and a
prefix query for one name finds no other. The table's time-to-live attribute (`expires_at`)
removes the record later; reads leave out one already past it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from takt.observability import logger
from takt.store.errors import condition_failure_item, is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SETTLE_SEC = 60
PREFIX = "name#"
FORMER_PREFIX = "former#"
END_OF_NAME = "\x1f"
# The most deleted holders of one name a look-up returns, newest first.
FORMER_LIMIT = 20


@dataclass(frozen=True)
class FormerHolder:
    """A deleted job that had a name, and until when its history is kept."""

    job_id: str
    name: str
    deleted_ms: int
    until_ms: int


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

    def remember_deleted(
        self, tenant_id: str, name: str, job_id: str, deleted_ms: int, until_ms: int
    ) -> None:
        """Record that the deleted job `job_id` had `name`, until its history expires.

        Written after the delete, which has happened by then: a failure here is logged, not
        raised, so the delete's caller is not told it failed (a retry would be 404) and the
        history stays reachable by the id the delete answered with."""
        key = f"{FORMER_PREFIX}{name}{END_OF_NAME}{deleted_ms:015d}#{job_id}"
        try:
            self._db.put_item(
                TableName=self._table,
                Item={
                    "tenant_id": {"S": tenant_id},
                    "counter": {"S": key},
                    "job_id": {"S": job_id},
                    "name": {"S": name},
                    "deleted_ms": {"N": str(deleted_ms)},
                    "until_ms": {"N": str(until_ms)},
                    "expires_at": {"N": str(until_ms // 1000)},
                },
            )
        except ClientError:
            logger.exception("deleted job's former name not recorded", job_id=job_id)

    def deleted_holders(self, tenant_id: str, name: str, now_ms: int) -> list[FormerHolder]:
        """The deleted jobs that had `name` and whose history is still kept, newest first."""
        resp = self._db.query(
            TableName=self._table,
            KeyConditionExpression="tenant_id = :t AND begins_with(#c, :p)",
            ExpressionAttributeNames={"#c": "counter"},
            ExpressionAttributeValues={
                ":t": {"S": tenant_id},
                ":p": {"S": f"{FORMER_PREFIX}{name}{END_OF_NAME}"},
            },
            ScanIndexForward=False,
            Limit=FORMER_LIMIT,
        )
        holders = [
            FormerHolder(
                job_id=item["job_id"]["S"],
                name=item["name"]["S"],
                deleted_ms=int(item["deleted_ms"]["N"]),
                until_ms=int(item["until_ms"]["N"]),
            )
            for item in resp.get("Items", [])
        ]
        return [holder for holder in holders if holder.until_ms > now_ms]

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
