"""A tenant's job counter, in the tenants table, and the transactions that keep it true.

The counter item (`<tenant>`, `jobs`) is written in the same DynamoDB transaction as the job it
counts: creating adds one on the condition that the count is below the tenant's limit, so two
racing creates can never both take the last slot; deleting takes one off. Each of these writes
also adds one to the item's `changes`, which a recount goes by (`TenantLimiter.recount`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.models.records import JobRecord
from takt.store.errors import ConflictError, NotFoundError, is_condition_failure
from takt.store.items import job_item
from takt.store.jobs import needs_index, unindexed_marker

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

JOBS_COUNTER = "jobs"


@dataclass(frozen=True)
class Counter:
    """The counter as read: the jobs it counts and how many writes changed it (None: absent)."""

    jobs: int | None
    changes: int | None

    @property
    def count(self) -> int:
        return self.jobs or 0


class JobCounts:
    """The jobs table and the tenants table's job counters, written together."""

    def __init__(self, client: DynamoDBClient, jobs_table: str, tenants_table: str) -> None:
        self._db = client
        self._jobs_table = jobs_table
        self._tenants_table = tenants_table

    def counter(self, tenant_id: str) -> Counter:
        resp = self._db.get_item(
            TableName=self._tenants_table,
            Key=_counter_key(tenant_id),
            ConsistentRead=True,
        )
        item: dict[str, Any] = dict(resp.get("Item") or {})
        jobs, changes = item.get("jobs"), item.get("changes")
        return Counter(
            jobs=int(jobs["N"]) if jobs else None,
            changes=int(changes["N"]) if changes else None,
        )

    def count_jobs(self, tenant_id: str) -> int:
        """The jobs the tenant stores, counted in the jobs table: a Query of its partition that
        returns counts only (no items), page by page."""
        query: dict[str, Any] = {
            "TableName": self._jobs_table,
            "KeyConditionExpression": "tenant_id = :tenant",
            "ExpressionAttributeValues": {":tenant": {"S": tenant_id}},
            "Select": "COUNT",
            "ConsistentRead": True,
        }
        total = 0
        while True:
            page = self._db.query(**query)
            total += page["Count"]
            if "LastEvaluatedKey" not in page:
                return total
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def set_count(self, tenant_id: str, read: Counter, stored: int) -> bool:
        """Write `stored` as the count if the counter is still as `read`; False when it moved."""
        values: dict[str, Any] = {":stored": {"N": str(stored)}, ":one": {"N": "1"}}
        conditions = []
        for name, value in (("jobs", read.jobs), ("changes", read.changes)):
            if value is None:
                conditions.append(f"attribute_not_exists({name})")
            else:
                conditions.append(f"{name} = :{name}")
                values[f":{name}"] = {"N": str(value)}
        try:
            self._db.update_item(
                TableName=self._tenants_table,
                Key=_counter_key(tenant_id),
                UpdateExpression="SET jobs = :stored ADD changes :one",
                ConditionExpression=" AND ".join(conditions),
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return False
        return True

    def create_job(
        self, job: JobRecord, limit: int | None, also: dict[str, Any] | None = None
    ) -> bool:
        """Store a new job and count it, in one transaction, with `also` (one more transaction
        item: the create's idempotency record marked done) when given.

        ConflictError when the job id is taken or `also`'s condition fails; False (nothing
        written) when the tenant already stores `limit` jobs.
        """
        count: dict[str, Any] = {
            "TableName": self._tenants_table,
            "Key": _counter_key(job.tenant_id),
            "UpdateExpression": "ADD jobs :one, changes :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
        if limit is not None:
            count["ConditionExpression"] = "attribute_not_exists(jobs) OR jobs < :max"
            count["ExpressionAttributeValues"][":max"] = {"N": str(limit)}
        reasons = self._transact(
            [
                {
                    "Put": {
                        "TableName": self._jobs_table,
                        # Marked unindexed until its due item is written (the reconciler's
                        # guarantee that no job the API acknowledged stays unindexed).
                        "Item": {
                            **job_item(job),
                            **(unindexed_marker(job) if needs_index(None, job) else {}),
                        },
                        "ConditionExpression": "attribute_not_exists(job_id)",
                    }
                },
                {"Update": count},
                *([also] if also else []),
            ]
        )
        if reasons[0] or any(reasons[2:]):
            raise ConflictError(f"job {job.job_id} exists, or its idempotency key moved on")
        return not reasons[1]

    def delete_job(self, tenant_id: str, job_id: str) -> None:
        """Delete a job and uncount it, in one transaction; NotFoundError when it is absent."""
        reasons = self._transact(
            [
                {
                    "Delete": {
                        "TableName": self._jobs_table,
                        "Key": {"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                        "ConditionExpression": "attribute_exists(job_id)",
                    }
                },
                {
                    "Update": {
                        "TableName": self._tenants_table,
                        "Key": _counter_key(tenant_id),
                        "UpdateExpression": "ADD jobs :minus, changes :one",
                        "ExpressionAttributeValues": {":minus": {"N": "-1"}, ":one": {"N": "1"}},
                    }
                },
            ]
        )
        if reasons[0]:
            raise NotFoundError(job_id)

    def _transact(self, items: list[dict[str, Any]]) -> list[bool]:
        """Run the transaction; for each item, whether its condition failed (all False: done)."""
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            reasons: Any = exc.response.get("CancellationReasons") or []
            failed = [r.get("Code") == "ConditionalCheckFailed" for r in reasons]
            if not any(failed):
                raise  # a conflict with another transaction: the SDK's caller retries
            return failed
        return [False] * len(items)


def _counter_key(tenant_id: str) -> dict[str, Any]:
    return {"tenant_id": {"S": tenant_id}, "counter": {"S": JOBS_COUNTER}}
