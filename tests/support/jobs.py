"""Building jobs and executions straight into the tables, as the API and the claimer would.

Tests that are about the scheduler, the worker or the watchdog write their jobs here rather than
through the API, so they control every field (next run time, overlap slot, retry policy) and the
due item is written first, as the API does, so a job is never unindexed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.models.ids import execution_id, new_job_id, to_ms
from takt.models.records import ExecState, ExecutionRecord, JobRecord, RetryPolicy
from takt.store.due import minute_of, shard_of
from takt.wiring import Services

TENANT = "tenant-a"
UNREACHABLE = "http://127.0.0.1:9/hook"


def job_id_in_shard(tenant_id: str, shard: int, shards: int) -> str:
    """A fresh job id whose due items land in `shard`, so several jobs share one claim."""
    while True:
        job_id = new_job_id()
        if shard_of(tenant_id, job_id, shards) == shard:
            return job_id


def make_job(
    *,
    now: datetime,
    next_run_time: datetime | None,
    tenant_id: str = TENANT,
    job_id: str | None = None,
    schedule: str | None = None,
    interval: str | None = None,
    run_at: datetime | None = None,
    target: str = UNREACHABLE,
    retry: RetryPolicy | None = None,
    **fields: Any,
) -> JobRecord:
    """A job record; a one-off at `next_run_time` unless a schedule or interval is given."""
    if schedule is None and interval is None and run_at is None:
        run_at = next_run_time
    return JobRecord(
        tenant_id=tenant_id,
        job_id=job_id or new_job_id(),
        schedule=schedule,
        interval=interval,
        run_at=run_at,
        anchor=fields.pop("anchor", now),
        target=target,
        retry=retry or RetryPolicy(),
        next_run_time=next_run_time,
        created_at=now,
        updated_at=now,
        **fields,
    )


def store_job(svc: Services, job: JobRecord, now: datetime) -> JobRecord:
    """Index the job at its next run time, then store it (the API's crash-safe order)."""
    if job.next_run_time is not None:
        svc.due.put(job.tenant_id, job.job_id, job.next_run_time, now)
    svc.jobs.create(job)
    return job


def make_execution(
    job: JobRecord,
    scheduled: datetime,
    now: datetime,
    *,
    state: ExecState = ExecState.PENDING,
    attempt: int = 1,
) -> ExecutionRecord:
    """The execution the claimer would create for `job`'s occurrence at `scheduled`."""
    record = ExecutionRecord.for_job(
        job, execution_id(job.job_id, scheduled), scheduled, state, now
    )
    return record.model_copy(update={"attempt": attempt})


def store_execution(svc: Services, record: ExecutionRecord, now: datetime) -> ExecutionRecord:
    """Create the execution as the claimer does: open executions get a check time."""
    check_at = now + timedelta(seconds=svc.settings.pending_resend_after_sec)
    assert svc.executions.create(record, check_at_ms=to_ms(check_at))
    return record


def create_through_api(svc: Services, target: str, **fields: object) -> JobRecord:
    """A job of TENANT created as the API creates one (validated body, indexed later by the
    test's `index_due`)."""
    body = JobCreate.model_validate({"target": target, **fields})
    return JobService(svc.api).create(TENANT, body, None)[0]


def occurrence_history(svc: Services, job_id: str) -> list[tuple[datetime, ExecState, str | None]]:
    """TENANT's executions of `job_id` as (scheduled time, state, reason), oldest first."""
    page, _ = svc.executions.list_for_job(TENANT, job_id, limit=200, cursor=None)
    return sorted((r.scheduled_time, r.state, r.reason) for r in page)


def jobs_due_in_shard(
    svc: Services, count: int, due: datetime, shard: int, **fields: Any
) -> list[JobRecord]:
    """`count` jobs of TENANT stored a minute before `due`, each due then in due shard `shard`,
    the watermark at the minute before `due`'s (a claim of that partition finds them all)."""
    svc.due.advance_watermark(minute_of(due) - timedelta(minutes=1))
    written = due - timedelta(minutes=1)
    return [
        store_job(
            svc,
            make_job(
                now=written,
                next_run_time=due,
                job_id=job_id_in_shard(TENANT, shard, svc.due.shards),
                **fields,
            ),
            written,
        )
        for _ in range(count)
    ]
