"""What one tenant may store and how fast it may create, kept in the tenants table.

- Jobs stored: a counter item (`<tenant>`, `jobs`) written in the same DynamoDB transaction as the
  job it counts. Creating adds one on the condition that the count is below the tenant's
  `max_jobs`, so two racing creates can never both take the last slot; deleting takes one off.
  Each of these writes also adds one to the item's `changes`, which a recount goes by.
  Jobs written before counting began, or outside these transactions, are not in it until a
  recount (`TenantLimiter.recount`, `takt tenants recount`) sets it to the jobs the tenant stores.
- Creation rate: a token bucket (`<tenant>`, `create-rate`), `create_per_sec` a second and
  `create_burst` deep, shared with fair dispatch's buckets (`takt.fairness.buckets`). A refused
  create says when a token is due, for `Retry-After`.

Both items are keyed by the tenant, like every item the API touches (IAM LeadingKeys).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.config import Settings
from takt.fairness.buckets import TokenBuckets
from takt.models.records import JobRecord
from takt.store.errors import ConflictError, NotFoundError, is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

JOBS_COUNTER = "jobs"
CREATE_BUCKET = "create-rate"
# A recount that finds the counter moved while it counted starts again, this many times at most.
RECOUNT_TRIES = 5


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


class RecountError(Exception):
    """The tenant's jobs changed during every try of a recount, so none could be written."""


@dataclass(frozen=True)
class Recount:
    """A tenant's job counter before a recount, and the jobs the recount found it stores."""

    before: int
    after: int


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
        return _jobs_in(self._counter(tenant_id))

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

    def recount(self, tenant_id: str) -> Recount:
        """Set the tenant's job counter to the jobs it stores (`count_jobs`).

        Every create and delete adds one to the counter's `changes` in the transaction that
        writes the job, so the write here is conditional on `changes` (and `jobs`) being as
        read before the count: a create or delete that committed during the count fails it,
        even one that left `jobs` at the same number, and the recount starts again, up to
        RECOUNT_TRIES times (then RecountError). A counter that already agrees is not written,
        so recounting a tenant that stores nothing and has no counter leaves no item behind.
        """
        for _ in range(RECOUNT_TRIES):
            counter = self._counter(tenant_id)
            before = _jobs_in(counter)
            stored = self.count_jobs(tenant_id)
            if stored == before:
                return Recount(before, stored)
            try:
                self._set_count(tenant_id, counter, stored)
            except ClientError as exc:
                if not is_condition_failure(exc):
                    raise
                continue
            return Recount(before, stored)
        raise RecountError(
            f"the jobs of tenant {tenant_id} changed during each of {RECOUNT_TRIES} counts; "
            "try again when it creates and deletes fewer"
        )

    def _counter(self, tenant_id: str) -> dict[str, Any] | None:
        resp = self._db.get_item(
            TableName=self._tenants_table,
            Key=_counter_key(tenant_id),
            ConsistentRead=True,
        )
        item = resp.get("Item")
        return dict(item) if item else None

    def _set_count(self, tenant_id: str, counter: dict[str, Any] | None, stored: int) -> None:
        """Write `stored` as the count if the counter is still `counter` (as read)."""
        values: dict[str, Any] = {":stored": {"N": str(stored)}, ":one": {"N": "1"}}
        conditions = []
        for name in ("jobs", "changes"):
            if counter is None or name not in counter:
                conditions.append(f"attribute_not_exists({name})")
            else:
                conditions.append(f"{name} = :{name}")
                values[f":{name}"] = counter[name]
        self._db.update_item(
            TableName=self._tenants_table,
            Key=_counter_key(tenant_id),
            UpdateExpression="SET jobs = :stored ADD changes :one",
            ConditionExpression=" AND ".join(conditions),
            ExpressionAttributeValues=values,
        )

    def check_room(self, tenant_id: str) -> None:
        """JobLimitError when the tenant is at its job limit now (the write checks it again)."""
        limit = self._settings.limits_for(tenant_id).max_jobs
        if limit is not None and self.job_count(tenant_id) >= limit:
            raise JobLimitError(limit)

    def create_job(self, job: JobRecord, also: dict[str, Any] | None = None) -> None:
        """Store a new job and count it, in one transaction, with `also` (one more transaction
        item: the create's idempotency record marked done) when given.

        ConflictError when the job id is taken or `also`'s condition fails, JobLimitError when
        the tenant is at its limit; either way nothing is written.
        """
        limit = self._settings.limits_for(job.tenant_id).max_jobs
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
                        "Item": job.to_item(),
                        "ConditionExpression": "attribute_not_exists(job_id)",
                    }
                },
                {"Update": count},
                *([also] if also else []),
            ]
        )
        if reasons[0] or any(reasons[2:]):
            raise ConflictError(f"job {job.job_id} exists, or its idempotency key moved on")
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


def retry_after(seconds: float) -> int:
    """Whole seconds for a `Retry-After` header, at least one."""
    return max(1, math.ceil(seconds))


def _jobs_in(counter: dict[str, Any] | None) -> int:
    return int((counter or {}).get("jobs", {}).get("N", "0"))


def _counter_key(tenant_id: str) -> dict[str, Any]:
    return {"tenant_id": {"S": tenant_id}, "counter": {"S": JOBS_COUNTER}}
