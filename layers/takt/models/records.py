"""What the tables hold: jobs and executions as typed records (their DynamoDB item forms are
`takt.store.items`)."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from takt.models.ids import execution_key
from takt.models.notify import NotifyPolicy
from takt.models.targets import StoredTarget, stored_target
from takt.schedule import (
    CronSchedule,
    DstPolicy,
    IntervalSchedule,
    OneOffSchedule,
    Schedule,
    jitter_offset,
    parse_duration,
)


class JobStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    COMPLETED = "completed"


class ExecState(StrEnum):
    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    RETRY_WAIT = "retry_wait"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DEAD = "dead"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset(
    {ExecState.SUCCEEDED, ExecState.FAILED, ExecState.DEAD, ExecState.SKIPPED, ExecState.CANCELLED}
)


class RetryPolicy(BaseModel):
    """How a failed attempt is retried; exponential is min(max, initial * 2^attempt), jittered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=5, ge=1, le=100)
    backoff: Literal["exponential", "fixed"] = "exponential"
    # "takt-duration": a format of the API's OpenAPI document (docs/API.md).
    initial_interval: str = Field(default="5s", json_schema_extra={"format": "takt-duration"})
    max_interval: str = Field(default="1h", json_schema_extra={"format": "takt-duration"})
    jitter: Literal["full", "none"] = "full"

    @field_validator("initial_interval", "max_interval")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value

    @property
    def initial(self) -> timedelta:
        return parse_duration(self.initial_interval)

    @property
    def maximum(self) -> timedelta:
        return parse_duration(self.max_interval)


TriggerRule = Literal["all_success", "all_done"]


class TaskSpec(BaseModel):
    """One task of a workflow job: what to run, and which tasks must end first (takt.workflows)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    target: StoredTarget
    payload: Any = None
    retry: RetryPolicy = RetryPolicy()
    timeout_sec: int = Field(default=300, ge=1, le=86400)
    depends_on: list[str] = Field(default_factory=list)
    trigger_rule: TriggerRule = "all_success"


class Dst(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    gap: Literal["run", "skip"] = "run"
    overlap: Literal["once", "twice"] = "once"


CatchupPolicy = Literal["skip", "once", "all"]
OverlapPolicy = Literal["allow", "skip", "queue", "replace"]
Trigger = Literal["schedule", "manual", "catchup", "backfill"]


def _job_target(value: str) -> str:
    """A job's or an execution's stored target: one a worker can call, or a workflow's."""
    return value if value == WORKFLOW_TARGET else stored_target(value)


# Read back through the one validator of targets (`takt.models.targets`): a record holding a
# target no worker can call does not read, and is isolated as any unreadable record is.
JobTarget = Annotated[str, AfterValidator(_job_target)]


class JobRecord(BaseModel):
    """A job definition as stored, plus the scheduler-owned `next_run_time`.

    `version` counts definition changes made through the API (the ETag); the scheduler's advance
    of `next_run_time` does not change it, so a client's If-Match survives the job firing.
    """

    model_config = ConfigDict(extra="ignore")

    tenant_id: str
    job_id: str
    name: str | None = None
    status: JobStatus = JobStatus.ACTIVE
    schedule: str | None = None
    interval: str | None = None
    run_at: datetime | None = None
    time_zone: str = "UTC"
    dst: Dst = Dst()
    start_at: datetime | None = None
    end_at: datetime | None = None
    anchor: datetime
    target: JobTarget
    payload: Any = None
    # A workflow's tasks (then `target` is WORKFLOW_TARGET); stored compressed as `tasks_z`.
    tasks: list[TaskSpec] | None = None
    retry: RetryPolicy = RetryPolicy()
    timeout_sec: int = 300
    priority: str = "default"
    catchup: CatchupPolicy = "once"
    catchup_window: str = "1h"
    overlap: OverlapPolicy = "allow"
    # Each occurrence fires at a deterministic point of [t, t + jitter) (takt.schedule.jitter).
    jitter: str | None = None
    # Occurrences before this instant are passed over (not run, not recorded); the job then
    # resumes by itself, as `next_run_time` already points past it.
    pause_until: datetime | None = None
    # Named calendars (takt.models.calendars) whose blackout windows skip occurrences.
    calendars: list[str] | None = None
    # None: the tenant's default (`Settings.notify_defaults`), if any.
    notify: NotifyPolicy | None = None
    idempotency_key: str | None = None
    version: int = 1
    next_run_time: datetime | None = None
    created_at: datetime
    updated_at: datetime
    last_execution_id: str | None = None
    last_outcome: str | None = None
    last_run_at: datetime | None = None
    active_execution: str | None = None

    def parsed_schedule(self) -> Schedule:
        if self.schedule is not None:
            return CronSchedule(
                self.schedule,
                self.time_zone,
                DstPolicy(gap=self.dst.gap, overlap=self.dst.overlap),
            )
        if self.interval is not None:
            return IntervalSchedule(parse_duration(self.interval), self.anchor)
        if self.run_at is None:
            raise ValueError(f"job {self.job_id} has no schedule")
        return OneOffSchedule(self.run_at)

    @property
    def recurring(self) -> bool:
        return self.run_at is None

    @property
    def first_allowed(self) -> datetime | None:
        """The earliest instant an occurrence may have: `start_at`, or a pause's end if later."""
        floors = [t for t in (self.start_at, self.pause_until) if t is not None]
        return max(floors) if floors else None

    def fire_time(self, nominal: datetime) -> datetime:
        """When the occurrence `nominal` fires: itself, or later by its jitter offset."""
        if self.jitter is None:
            return nominal
        return nominal + jitter_offset(self.job_id, nominal, parse_duration(self.jitter))


WORKFLOW_TARGET = "workflow"
"""The `target` of a workflow job and of its runs: what runs is in `tasks`."""


def tasks_blob(tasks: list[TaskSpec] | None) -> bytes | None:
    """A workflow's tasks as compressed JSON: 1,000 tasks of text fit DynamoDB's 400 KB item."""
    if tasks is None:
        return None
    text = json.dumps([t.model_dump(mode="json") for t in tasks], separators=(",", ":"))
    return zlib.compress(text.encode(), 6)


class Attempt(BaseModel):
    """One try of an execution, kept in the execution's history."""

    model_config = ConfigDict(extra="ignore")

    attempt: int
    started_at: str | None = None
    finished_at: str | None = None
    outcome: str
    status_code: int | None = None
    error: str | None = None
    duration_ms: int | None = None
    # Where the attempt's output can be read: a container target's CloudWatch log stream.
    logs: str | None = None


@dataclass(frozen=True)
class Budget:
    """An execution's attempt in the budget of the run it is on: the first (`rerun` 0) or the
    `rerun`-th re-run, each with the attempts it was given ("re-run 2, attempt 1 of 3")."""

    rerun: int
    attempt: int
    max_attempts: int

    @property
    def label(self) -> str:
        counted = f"attempt {self.attempt} of {self.max_attempts}"
        return f"re-run {self.rerun}, {counted}" if self.rerun else counted


class ExecutionRecord(BaseModel):
    """An occurrence of a job and its life, from pending to a terminal state.

    It carries a snapshot of what to run (target, payload, timeout, retry policy), taken when the
    occurrence fired: the history shows exactly what ran, and a worker needs no read of the job.
    """

    model_config = ConfigDict(extra="ignore")

    tenant_id: str
    job_id: str
    execution_id: str
    scheduled_time: datetime
    trigger: Trigger = "schedule"
    state: ExecState
    attempt: int = 1
    max_attempts: int = 5
    lane: str = "default"
    job_version: int = 1
    target: JobTarget
    payload: Any = None
    timeout_sec: int = 300
    retry: RetryPolicy = RetryPolicy()
    overlap: OverlapPolicy = "allow"
    lease_token: str | None = None
    worker_id: str | None = None
    lease_expires_at: int | None = None
    heartbeat_seq: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    retry_at: datetime | None = None
    lag_ms: int | None = None
    reason: str | None = None
    error: str | None = None
    status_code: int | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    fenced_reports: int = 0
    # True once a cancel was asked for while the execution ran; never stored otherwise, so a
    # write can be fenced on `attribute_not_exists(cancel_requested)`.
    cancel_requested: bool | None = None
    # True while what follows the watchdog's terminal write (`Lifecycle.follow_up`: the job's
    # note, its slots, its notification) is still to do; the execution stays in the `open`
    # index until it is done, so a watchdog that dies in between leaves it to the next sweep.
    follow_up: bool | None = None
    # Workflows (takt.workflows): a run's own execution counts its tasks; a task's execution
    # names its run and task, so its terminal state advances the run.
    run_tasks: int | None = None
    run_gen: int | None = None
    run_id: str | None = None
    task_id: str | None = None
    # The backfill (takt.backfill) that created it, whose next occurrences start as it ends.
    backfill_id: str | None = None
    # A re-run (`Lifecycle.rerun`): which one it is on (1 for the first), and the attempts
    # used before it. `attempt` and `max_attempts` count across re-runs, since the fence
    # (execution id, attempt) must never repeat; `budget` reads them against the re-run's own
    # budget. None (not stored) until the first re-run.
    rerun: int | None = None
    rerun_from: int | None = None
    created_at: datetime

    @classmethod
    def for_job(
        cls,
        job: JobRecord,
        execution_id: str,
        scheduled: datetime,
        state: ExecState,
        created_at: datetime,
        *,
        trigger: Trigger = "schedule",
        reason: str | None = None,
        backfill_id: str | None = None,
    ) -> ExecutionRecord:
        """A new execution of `job`, with the snapshot of what to run."""
        return cls(
            tenant_id=job.tenant_id,
            job_id=job.job_id,
            execution_id=execution_id,
            scheduled_time=scheduled,
            trigger=trigger,
            state=state,
            max_attempts=job.retry.max_attempts,
            lane=job.priority,
            job_version=job.version,
            target=job.target,
            payload=job.payload,
            timeout_sec=job.timeout_sec,
            retry=job.retry,
            overlap=job.overlap,
            reason=reason,
            run_tasks=len(job.tasks) if job.tasks else None,
            backfill_id=backfill_id,
            created_at=created_at,
            finished_at=created_at if state.terminal else None,
        )

    @property
    def budget(self) -> Budget:
        """Its attempt read against the budget of its first run or its latest re-run."""
        used = self.rerun_from or 0
        return Budget(self.rerun or 0, self.attempt - used, self.max_attempts - used)

    @property
    def job_key(self) -> str:
        return job_key(self.tenant_id, execution_key(self.execution_id)[0])

    @property
    def sk(self) -> str:
        return execution_key(self.execution_id)[1]


def success_may_go_unnoted(last_outcome: str | None, status: str | None) -> bool:
    """Whether a later success of a job may be left unnoted on it: its noted outcome is a
    success, or nothing is noted on a one-off that fired (it will not fire again). The worker
    skips such a note (`Lifecycle._note_outcome`, when no failure streak or incident stands
    either), and the API reads such a job's newest run from its history
    (`JobService.with_newest_outcomes`)."""
    if last_outcome is None:
        return status == JobStatus.COMPLETED.value
    return last_outcome == ExecState.SUCCEEDED.value


def job_key(tenant_id: str, job_id: str) -> str:
    return f"{tenant_id}#{job_id}"
