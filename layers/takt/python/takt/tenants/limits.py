"""What one tenant may store and how fast it may create, kept in the tenants table.

- Jobs stored: a counter item (`<tenant>`, `jobs`) written in the same DynamoDB transaction as the
  job it counts. Creating adds one on the condition that the count is below the tenant's
  `max_jobs`, so two racing creates can never both take the last slot; deleting takes one off.
  The count covers the jobs written since counting began: jobs stored before it are not in it.
- Creation rate: a token bucket (`<tenant>`, `create-rate`), `create_per_sec` a second and
  `create_burst` deep, shared with fair dispatch's buckets (`takt.fairness.buckets`). A refused
  create says when a token is due, for `Retry-After`.

Both items are keyed by the tenant, like every item the API touches (IAM LeadingKeys).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.config import Settings
from takt.fairness.buckets import TokenBuckets
from takt.models.records import JobRecord
from takt.store.errors import ConflictError, NotFoundError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

JOBS_COUNTER = "jobs"
CREATE_BUCKET = "create-rate"


class JobLimitError(Exception):
    """The tenant stores `limit` jobs already."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the tenant stores {limit} jobs, its limit")
        self.limit = limit


class RateLimitedError(Exception):
    """The tenant creates faster than its rate; a token is due in `retry_after_sec`."""

    def __init__(self, rate: float, retry_after_sec: float) -> None:
        super().__init__(f"the tenant creates more than {rate:g} jobs a second")
        self.rate = rate
        self.retry_after_sec = retry_after_sec


class TenantLimiter:
    def __init__(
        self,
        client: DynamoDBClient,
        settings: Settings,
        jobs_table: str,
        buckets: TokenBuckets,
    ) -> None:
        self._db = client
        self._settings = settings
        self._jobs_table = jobs_table
        self._tenants_table = settings.tenants_table
        self._buckets = buckets

    def take_create_token(self, tenant_id: str, now: datetime) -> None:
        """Spend one creation token; RateLimitedError when the bucket is empty."""
        limits = self._settings.limits_for(tenant_id)
        if limits.create_per_sec is None:
            return
        grant = self._buckets.take(
            tenant_id, CREATE_BUCKET, 1, limits.create_per_sec, limits.create_burst, now
        )
        if not grant.granted:
            raise RateLimitedError(limits.create_per_sec, grant.retry_after_sec)

    def job_count(self, tenant_id: str) -> int:
        resp = self._db.get_item(
            TableName=self._tenants_table,
            Key=_counter_key(tenant_id),
            ConsistentRead=True,
        )
        item = resp.get("Item") or {}
        return int(item.get("jobs", {}).get("N", "0"))

    def check_room(self, tenant_id: str) -> None:
        """JobLimitError when the tenant is at its job limit now (the write checks it again)."""
        limit = self._settings.limits_for(tenant_id).max_jobs
        if limit is not None and self.job_count(tenant_id) >= limit:
            raise JobLimitError(limit)

    def create_job(self, job: JobRecord) -> None:
        """Store a new job and count it, in one transaction.

        ConflictError when the job id is taken, JobLimitError when the tenant is at its limit;
        either way nothing is written.
        """
        limit = self._settings.limits_for(job.tenant_id).max_jobs
        count: dict[str, Any] = {
            "TableName": self._tenants_table,
            "Key": _counter_key(job.tenant_id),
            "UpdateExpression": "ADD jobs :one",
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
                        "Item": job.to_item(),
                        "ConditionExpression": "attribute_not_exists(job_id)",
                    }
                },
                {"Update": count},
            ]
        )
        if reasons[0]:
            raise ConflictError(f"job {job.job_id} exists")
        if reasons[1]:
            assert limit is not None
            raise JobLimitError(limit)

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
                        "UpdateExpression": "ADD jobs :minus",
                        "ExpressionAttributeValues": {":minus": {"N": "-1"}},
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


def retry_after(seconds: float) -> int:
    """Whole seconds for a `Retry-After` header, at least one."""
    return max(1, math.ceil(seconds))


def _counter_key(tenant_id: str) -> dict[str, Any]:
    return {"tenant_id": {"S": tenant_id}, "counter": {"S": JOBS_COUNTER}}
