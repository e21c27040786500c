"""What one tenant may store and how fast it may create, kept in the tenants table.

- Jobs stored: a counter item written in the same DynamoDB transaction as the job it counts
  (`takt.store.counts`), conditional on the tenant's `max_jobs`. Jobs written before counting
  began, or outside these transactions, are not in it until a recount (`TenantLimiter.recount`,
  `takt tenants recount`) sets it to the jobs the tenant stores.
- Creation rate: a token bucket (`<tenant>`, `create-rate`), `create_per_sec` a second and
  `create_burst` deep, shared with fair dispatch's buckets (`takt.store.buckets`). A refused
  create says when a token is due, for `Retry-After`.

Both items are keyed by the tenant, like every item the API touches (IAM LeadingKeys).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from takt.config import Settings
from takt.models.records import JobRecord
from takt.store.buckets import TokenBuckets
from takt.store.counts import JobCounts

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

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
        self._settings = settings
        self._counts = JobCounts(client, jobs_table, settings.tenants_table)
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
        return self._counts.counter(tenant_id).count

    def count_jobs(self, tenant_id: str) -> int:
        """The jobs the tenant stores, counted in the jobs table."""
        return self._counts.count_jobs(tenant_id)

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
            counter = self._counts.counter(tenant_id)
            stored = self.count_jobs(tenant_id)
            if stored == counter.count or self._counts.set_count(tenant_id, counter, stored):
                return Recount(counter.count, stored)
        raise RecountError(
            f"the jobs of tenant {tenant_id} changed during each of {RECOUNT_TRIES} counts; "
            "try again when it creates and deletes fewer"
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
        if not self._counts.create_job(job, limit, also):
            assert limit is not None
            raise JobLimitError(limit)

    def delete_job(self, tenant_id: str, job_id: str) -> None:
        """Delete a job and uncount it, in one transaction; NotFoundError when it is absent."""
        self._counts.delete_job(tenant_id, job_id)


def retry_after(seconds: float) -> int:
    """Whole seconds for a `Retry-After` header, at least one."""
    return max(1, math.ceil(seconds))
