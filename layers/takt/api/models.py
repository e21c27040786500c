"""The API's request and response bodies: the public contract, published as OpenAPI."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Literal
from zoneinfo import ZoneInfo, available_timezones

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from takt.clock import format_local
from takt.models.ids import format_time
from takt.models.instants import Instant
from takt.models.notify import NotifyPolicy
from takt.models.records import (
    Attempt,
    CatchupPolicy,
    Dst,
    ExecutionRecord,
    JobRecord,
    OverlapPolicy,
    RetryPolicy,
    TaskSpec,
)
from takt.models.target_forms import TargetField, check_target, target_text
from takt.schedule import describe, parse_cron, parse_duration, validate_time_zone
from takt.workflows.model import MAX_TASKS, TaskIn, WorkflowError, validate_tasks

Lane = Literal["high", "default", "low"]
MIN_INTERVAL = timedelta(seconds=1)
MAX_JITTER = timedelta(hours=24)
MAX_CALENDARS = 10
CalendarName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
JITTER_DESCRIPTION = (
    "each occurrence fires at a point of [t, t + jitter) fixed by a hash of the job and t, "
    'e.g. "15m" (docs/SCHEDULES.md)'
)
PAUSE_UNTIL_DESCRIPTION = (
    "occurrences before this instant are not run and not recorded; the job then resumes by itself"
)
CALENDARS_DESCRIPTION = "names of calendars whose blackout windows skip occurrences (recorded)"
# Formats of this API, named in the OpenAPI document (docs/API.md): a grammar JSON Schema cannot
# state, checked by takt.schedule.
# The whitespace a cron expression's fields or a duration may have around them: what Python's
# str.split and str.strip take for it, but for the control characters and line separators
# `takt.api.admission` refuses in every such string; a word is anything else.
SPACE = "[ \\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000]"
WORD = "[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]"
# A cron expression's pattern is its shape (`takt.schedule.cron`: a macro, or 5 or 6 fields
# between any whitespace), looser than its grammar, which the API checks: whatever the API
# accepts matches it, so `""` or `"0"` is outside the schema as well as refused.
CRON_PATTERN = rf"^{SPACE}*(?:@{WORD}+|{WORD}+(?:{SPACE}+{WORD}+){{4,5}}){SPACE}*$"
CRON: dict[str, Any] = {"format": "takt-cron", "pattern": CRON_PATTERN}
# A duration's pattern is the shape `takt.schedule.parse_duration` reads, looser than it (units in
# any order, an ISO part of any letters it knows): whatever the API accepts matches it, so a
# string that does not ("", "0", "1x") is outside the schema as well as refused.
DURATION_PATTERN = rf"^{SPACE}*(?:(?:[0-9]+(?:ms|[dhms]))+|[Pp][0-9WwDdTtHhMmSs.,]*){SPACE}*$"
DURATION: dict[str, Any] = {"format": "takt-duration", "pattern": DURATION_PATTERN}
# Text a person reads (names, keys): no control characters, no bidi controls, no line
# separators, no non-characters of the Basic Multilingual Plane (takt.api.admission).
TEXT_PATTERN = (
    "^[^\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"
    "\\u2028\\u2029\\ufdd0-\\ufdef\\ufffe\\uffff]*$"
)
# A job's field types, written once for the create and the update (each makes them optional
# in its own way): the bounds live with the type, so the two bodies cannot bound a field apart.
JobName = Annotated[str, Field(max_length=200, pattern=TEXT_PATTERN)]
TimeoutSec = Annotated[int, Field(ge=1, le=86400)]
Tasks = Annotated[list[TaskIn], Field(min_length=1, max_length=MAX_TASKS)]
Calendars = Annotated[list[CalendarName], Field(max_length=MAX_CALENDARS)]
Status = Literal["active", "paused"]
# The IANA zones a job may name: every zone of the zone database but the host's own copy.
TIME_ZONES = tuple(sorted(available_timezones() - {"localtime"}))
TimeZone = Annotated[
    str,
    Field(description="IANA time zone the schedule is evaluated in"),
    WithJsonSchema({"type": "string", "enum": list(TIME_ZONES)}),
]


class FieldError(ValueError):
    """A check across fields that still blames one of them.

    pydantic gives a model-level check no location; the API reads `field` from the error so its
    problem+json answer names the field instead of "body".
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _without_null(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Document the fields of `model` that refuse null as refusing it (pydantic writes an
    optional field as `anyOf: [..., {"type": "null"}]` whether null is allowed or not)."""
    not_null: frozenset[str] = getattr(model, "NOT_NULL", frozenset())
    for name, field in schema.get("properties", {}).items():
        options = field.get("anyOf")
        if name in not_null and isinstance(options, list):
            kept = [o for o in options if o != {"type": "null"}]
            field.pop("anyOf")
            if len(kept) == 1:
                field.update(kept[0])
            else:
                field["anyOf"] = kept


_SCHEDULE_KINDS = ("schedule", "run_at", "interval")
# A job has exactly one of a schedule kind, and one of a target or tasks: null for one would
# mean nothing sensible, in a create or an update.
ONE_OF = frozenset({*_SCHEDULE_KINDS, "target", "tasks"})


def _create_schema(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """A create's schema: exactly one kind of schedule, and a target or tasks."""
    _without_null(schema, model)
    schema["allOf"] = [
        {"oneOf": [{"required": [kind]} for kind in _SCHEDULE_KINDS]},
        {"oneOf": [{"required": ["target"]}, {"required": ["tasks"]}]},
    ]


def _patch_schema(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """An update's schema: at most one kind of schedule, not both a target and tasks."""
    _without_null(schema, model)
    pairs = [
        *([a, b] for i, a in enumerate(_SCHEDULE_KINDS) for b in _SCHEDULE_KINDS[i + 1 :]),
        ["target", "tasks"],
    ]
    schema["allOf"] = [{"not": {"required": pair}} for pair in pairs]


class _Schedulable(BaseModel):
    """Fields shared by create and update, validated the same way in both."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_without_null)
    # Fields that may be left out but not given as null (null would mean nothing sensible); the
    # API refuses such a null before validating the model (`takt.api.admission.check_body`).
    NOT_NULL: ClassVar[frozenset[str]] = frozenset()

    @field_validator("time_zone", check_fields=False)
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is not None and value not in TIME_ZONES:
            validate_time_zone(value)
            raise ValueError(f"{value!r} is not a zone of the IANA zone database")
        return value

    @field_validator("catchup_window", check_fields=False)
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("jitter", check_fields=False)
    @classmethod
    def _jitter(cls, value: str | None) -> str | None:
        # EventBridge Scheduler's flexible window goes up to 24 hours; so does takt's jitter.
        if value is not None and not timedelta(0) < parse_duration(value) <= MAX_JITTER:
            raise ValueError("jitter must be more than 0 and at most 24h")
        return value

    @field_validator("interval", check_fields=False)
    @classmethod
    def _interval(cls, value: str | None) -> str | None:
        # The scheduler ticks once a second; a shorter interval could only run late and pile up.
        if value is not None and parse_duration(value) < MIN_INTERVAL:
            raise ValueError("interval must be at least 1s")
        return value

    @field_validator("target", mode="before", check_fields=False)
    @classmethod
    def _target_object(cls, value: Any) -> Any:
        return target_text(value)

    @field_validator("target", check_fields=False)
    @classmethod
    def _target(cls, value: str | None) -> str | None:
        return None if value is None else check_target(value)


class JobCreate(_Schedulable):
    """A new job: exactly one of `schedule` (cron), `run_at` (one-off) or `interval`."""

    NOT_NULL = frozenset(ONE_OF)
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=_create_schema,
    )

    name: JobName | None = None
    time_zone: TimeZone = "UTC"
    dst: Dst = Dst()
    schedule: str | None = Field(
        default=None, description="cron: 5 fields, optional seconds", json_schema_extra=CRON
    )
    run_at: Instant | None = None
    run_late: bool = Field(
        default=False,
        description="run a `run_at` older than the catch-up window at once; without it such a "
        "`run_at` is refused",
    )
    interval: str | None = Field(
        default=None, description='fixed interval, e.g. "90s", "1h"', json_schema_extra=DURATION
    )
    start_at: Instant | None = None
    end_at: Instant | None = None
    target: TargetField | None = None
    tasks: Tasks | None = Field(
        default=None,
        description="a workflow instead of one target: tasks with `depends_on` (docs/WORKFLOWS.md)",
    )
    payload: JsonValue = None
    retry: RetryPolicy = RetryPolicy()
    timeout_sec: TimeoutSec = 300
    priority: Lane = "default"
    catchup: CatchupPolicy = "once"
    catchup_window: str = Field(default="1h", json_schema_extra=DURATION)
    overlap: OverlapPolicy = "allow"
    jitter: str | None = Field(
        default=None, description=JITTER_DESCRIPTION, json_schema_extra=DURATION
    )
    status: Status = Field(default="active", description="create it paused to resume it later")
    pause_until: Instant | None = Field(default=None, description=PAUSE_UNTIL_DESCRIPTION)
    calendars: Calendars | None = Field(default=None, description=CALENDARS_DESCRIPTION)
    notify: NotifyPolicy | None = Field(
        default=None,
        description="whom to tell when executions die or the job keeps failing; the tenant's "
        "default when absent (docs/OPERATIONS.md)",
    )
    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=256, pattern=TEXT_PATTERN
    )

    @model_validator(mode="after")
    def _one_schedule(self) -> JobCreate:
        given = [n for n in ("schedule", "run_at", "interval") if getattr(self, n) is not None]
        if len(given) != 1:
            raise FieldError(
                given[1] if given else "schedule",
                "exactly one of schedule, run_at or interval is required",
            )
        if (self.target is None) == (self.tasks is None):
            raise FieldError("target", "exactly one of target or tasks is required")
        _check_tasks(self.tasks)
        if self.schedule is not None:
            parse_cron(self.schedule, self.time_zone)
        if self.start_at and self.end_at and self.end_at <= self.start_at:
            raise FieldError("end_at", "end_at must be after start_at")
        return self


class JobPatch(_Schedulable):
    """A partial update; fields not given keep their value. `status` pauses or resumes.

    Only `name`, `start_at`, `end_at`, `payload`, `jitter`, `pause_until`, `calendars` and
    `notify` may be null, which clears them; null for any other field is refused (docs/API.md,
    "Changing a job").
    """

    # Null clears a field only where a create may leave it empty (its default is null), and
    # never for one of the choices a job makes once (a schedule kind, a target or tasks).
    NOT_NULL = ONE_OF | {
        name for name, field in JobCreate.model_fields.items() if field.default is not None
    }

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=_patch_schema,
    )

    name: JobName | None = None
    status: Status | None = None
    time_zone: TimeZone | None = None
    dst: Dst | None = None
    schedule: str | None = Field(default=None, json_schema_extra=CRON)
    run_at: Instant | None = None
    run_late: bool = Field(
        default=False, description="as in a create: accept a `run_at` older than the window"
    )
    interval: str | None = Field(default=None, json_schema_extra=DURATION)
    start_at: Instant | None = None
    end_at: Instant | None = None
    target: TargetField | None = None
    tasks: Tasks | None = None
    payload: JsonValue = None
    retry: RetryPolicy | None = None
    timeout_sec: TimeoutSec | None = None
    priority: Lane | None = None
    catchup: CatchupPolicy | None = None
    catchup_window: str | None = Field(default=None, json_schema_extra=DURATION)
    overlap: OverlapPolicy | None = None
    jitter: str | None = Field(
        default=None,
        description=JITTER_DESCRIPTION + "; null removes it",
        json_schema_extra=DURATION,
    )
    pause_until: Instant | None = Field(
        default=None, description=PAUSE_UNTIL_DESCRIPTION + "; null resumes it now"
    )
    calendars: Calendars | None = Field(default=None, description=CALENDARS_DESCRIPTION)
    notify: NotifyPolicy | None = Field(
        default=None, description="null falls back to the tenant's default"
    )

    @model_validator(mode="after")
    def _at_most_one_schedule(self) -> JobPatch:
        given = [n for n in ("schedule", "run_at", "interval") if getattr(self, n) is not None]
        if len(given) > 1:
            raise FieldError(given[1], "at most one of schedule, run_at or interval may be given")
        if self.target is not None and self.tasks is not None:
            raise FieldError("tasks", "at most one of target or tasks may be given")
        _check_tasks(self.tasks)
        return self


def _check_tasks(tasks: list[TaskIn] | None) -> None:
    if tasks is None:
        return
    try:
        validate_tasks(list(tasks))
    except WorkflowError as exc:
        raise FieldError(exc.field, str(exc)) from None


class JobOut(BaseModel):
    id: str
    name: str | None
    status: str
    schedule: str | None
    interval: str | None
    run_at: str | None
    time_zone: str
    dst: Dst
    start_at: str | None
    end_at: str | None
    target: str | None = Field(description="null for a workflow, which has `tasks`")
    tasks: list[TaskSpec] | None
    payload: JsonValue
    retry: RetryPolicy
    timeout_sec: int
    priority: str
    catchup: str
    catchup_window: str
    overlap: str
    jitter: str | None
    pause_until: str | None
    calendars: list[str] | None
    notify: NotifyPolicy | None
    idempotency_key: str | None
    version: int
    next_run_time: str | None
    created_at: str
    updated_at: str
    last_execution_id: str | None
    last_outcome: str | None
    last_run_at: str | None

    @classmethod
    def of(cls, job: JobRecord) -> JobOut:
        """The job as the API shows it: each field the record has under the same name, its
        instants in RFC 3339, so a field added to both models shows with no edit here."""
        shown = {
            name: _t(value) if isinstance(value, datetime) else value
            for name, value in job
            if name in cls.model_fields
        }
        shown.update(
            id=job.job_id,
            status=job.status.value,
            target=None if job.tasks else job.target,
        )
        return cls.model_validate(shown)


class JobPage(BaseModel):
    items: list[JobOut]
    next_cursor: str | None


class DeletedJobOut(BaseModel):
    """A deleted job that had a name: its id opens its history until `history_until`."""

    id: str
    name: str
    deleted_at: str
    history_until: str

    @classmethod
    def of(cls, job_id: str, name: str, deleted_ms: int, until_ms: int) -> DeletedJobOut:
        return cls(
            id=job_id,
            name=name,
            deleted_at=format_time(datetime.fromtimestamp(deleted_ms / 1000, UTC)),
            history_until=format_time(datetime.fromtimestamp(until_ms / 1000, UTC)),
        )


class DeletedJobPage(BaseModel):
    """The deleted jobs that had a name, newest deletion first."""

    items: list[DeletedJobOut]


class ExecutionOut(BaseModel):
    id: str
    job_id: str
    scheduled_time: str
    trigger: str
    state: str
    attempt: int = Field(
        description="the attempt, counted across re-runs (with the id, the fence of a worker's "
        "reports); `rerun_attempt` reads it against its own re-run's budget"
    )
    max_attempts: int = Field(description="the last attempt allowed, counted across re-runs")
    rerun: int = Field(description="0 for the first run; n once re-run n times")
    rerun_attempt: int = Field(
        description="the attempt within the budget of its first run or latest re-run"
    )
    rerun_max_attempts: int = Field(description="that run's or re-run's budget of attempts")
    attempt_label: str = Field(
        description='the attempt as the console shows it: "attempt 2 of 3", '
        '"re-run 2, attempt 1 of 3"'
    )
    lane: str
    started_at: str | None
    finished_at: str | None
    retry_at: str | None
    lag_ms: int | None
    status_code: int | None
    error: str | None
    reason: str | None
    attempts: list[Attempt]
    fenced_reports: int
    cancel_requested: bool = Field(
        description="a cancel was asked for while it ran; it becomes cancelled when its worker "
        "next reports"
    )
    created_at: str

    @classmethod
    def of(cls, record: ExecutionRecord) -> ExecutionOut:
        return cls(
            id=record.execution_id,
            job_id=record.job_id,
            scheduled_time=format_time(record.scheduled_time),
            trigger=record.trigger,
            state=record.state.value,
            attempt=record.attempt,
            max_attempts=record.max_attempts,
            rerun=record.budget.rerun,
            rerun_attempt=record.budget.attempt,
            rerun_max_attempts=record.budget.max_attempts,
            attempt_label=record.budget.label,
            lane=record.lane,
            started_at=_t(record.started_at),
            finished_at=_t(record.finished_at),
            retry_at=_t(record.retry_at),
            lag_ms=record.lag_ms,
            status_code=record.status_code,
            error=record.error,
            reason=record.reason,
            attempts=record.attempts,
            fenced_reports=record.fenced_reports,
            cancel_requested=bool(record.cancel_requested),
            created_at=format_time(record.created_at),
        )


class ExecutionPage(BaseModel):
    items: list[ExecutionOut]
    next_cursor: str | None


class RerunIn(BaseModel):
    """How to re-run an execution: with the job as it is now, or as it ran."""

    model_config = ConfigDict(extra="forbid")

    as_was: bool = Field(
        default=False,
        description="false (default): re-run with the job's current target, payload, timeout, "
        "retry policy and priority; true: re-send the snapshot the execution was made with",
    )


class BulkRerunIn(RerunIn):
    """Which of a job's executions to re-run at once."""

    state: Literal["dead", "failed"] = Field(
        default="dead", description="re-run the job's executions in this state"
    )
    limit: int = Field(default=100, ge=1, le=500, description="re-run at most this many")


class RerunRefused(BaseModel):
    id: str
    detail: str


class BulkRerunOut(BaseModel):
    items: list[ExecutionOut] = Field(description="the executions re-run, pending again")
    refused: list[RerunRefused] = Field(description="executions that could not be re-run, and why")
    more: bool = Field(description="more executions in that state remain: call again")


class Problem(BaseModel):
    """RFC 9457 problem details, as every error answer carries."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    errors: list[dict[str, Any]] | None = None


def _t(value: datetime | None) -> str | None:
    return None if value is None else format_time(value)


class NextRunOut(BaseModel):
    at: str = Field(description="the occurrence's instant, RFC 3339 in UTC")
    local: str = Field(description="the same instant in the job's time zone, with its offset")
    fires_at: str = Field(description="when it fires: `at`, or later by the job's jitter")


class PreviewOut(BaseModel):
    """When a job runs next, and its schedule in plain words."""

    job_id: str
    status: str
    time_zone: str
    description: str = Field(description='the schedule in words, e.g. "at 06:00 every day"')
    next_runs: list[NextRunOut] = Field(
        description="the next occurrences after now; a paused job's are those it would have "
        "if resumed now, a completed job has none"
    )

    @classmethod
    def of(cls, job: JobRecord, runs: list[datetime]) -> PreviewOut:
        zone = ZoneInfo(job.time_zone)
        return cls(
            job_id=job.job_id,
            status=job.status.value,
            time_zone=job.time_zone,
            description=describe(job.parsed_schedule()),
            next_runs=[
                NextRunOut(
                    at=format_time(run),
                    local=format_local(run, zone),
                    fires_at=format_time(job.fire_time(run)),
                )
                for run in runs
            ],
        )


class JobCountsOut(BaseModel):
    active: int
    paused: int
    completed: int
    total: int
    complete: bool = Field(
        description="false when the tenant has more jobs than one stats call reads: the counts "
        "and failing jobs then cover the oldest jobs only"
    )


class LaneOut(BaseModel):
    """SQS's approximate message counts for one priority lane."""

    lane: str
    waiting: int
    in_flight: int
    delayed: int
    dead_letter: int = Field(description="messages in the lane's dead-letter queue")


_DISPATCHED = (
    "scheduled occurrences the claimers sent to the lanes, one per execution created (not "
    "manual runs, re-runs, retries or workflow tasks, which the ended counts include)"
)
_ENDED = "executions that ended {state}, one per execution, of any trigger"
_RETRIED = (
    "failed attempts that will be tried again: one per attempt, not per execution (an "
    "execution retried twice and then succeeded counts 2 here and 1 in succeeded)"
)
_SKIPPED = "occurrences decided not to run (overlap, catch-up, calendar, edit), one per occurrence"


class MinuteOut(BaseModel):
    """One minute of the deployment's metrics (CloudWatch's, or `takt local`'s in memory)."""

    minute: str = Field(description="start of the minute, RFC 3339 in UTC")
    dispatched: int = Field(description=_DISPATCHED)
    succeeded: int = Field(description=_ENDED.format(state="succeeded"))
    failed: int = Field(description=_ENDED.format(state="failed (the target ruled out a retry)"))
    dead: int = Field(description=_ENDED.format(state="dead (every attempt failed)"))
    retried: int = Field(description=_RETRIED)
    skipped: int = Field(description=_SKIPPED)
    lag_p50_ms: float | None = Field(description="median ScheduleLag; null with no runs")
    lag_p99_ms: float | None
    lag_max_ms: float | None
    dispatch_lag_max_ms: float | None


class TotalsOut(BaseModel):
    """The window's sums of every counted metric, from `metrics_since` on: the sums of
    `minutes`, so the two always agree."""

    dispatched: int = Field(description=_DISPATCHED)
    succeeded: int = Field(description=_ENDED.format(state="succeeded"))
    failed: int = Field(description=_ENDED.format(state="failed"))
    dead: int = Field(description=_ENDED.format(state="dead"))
    retried: int = Field(description=_RETRIED)
    skipped: int = Field(description=_SKIPPED)
    lease_expired: int
    pending_resent: int
    retries_released: int
    stale_reports_fenced: int


class FailingJobOut(BaseModel):
    id: str
    name: str | None
    status: str
    last_outcome: str
    last_run_at: str | None
    last_execution_id: str | None


class StatsOut(BaseModel):
    """The overview: the caller's jobs, and the deployment's throughput, lag and lanes.

    `jobs`, `failing_jobs` and `dead_executions` are the caller's tenant's; `minutes`, `totals`
    and `lanes` are the whole deployment's, as its dashboard and alarms see them.
    """

    generated_at: str
    window_minutes: int
    metrics_since: str = Field(
        description="the first instant `minutes` and `totals` count: the window's start, or "
        "later when the metrics began within it (`takt local` keeps them in memory, so a "
        "restart starts them again); the minutes before it are unknown, not zero"
    )
    jobs: JobCountsOut
    failing_jobs: list[FailingJobOut] = Field(
        description="jobs whose last execution failed or died, most recent first"
    )
    dead_executions: int = Field(
        description="the tenant's executions that are dead now, over its whole kept history "
        "(a re-run takes one out): a state, not the window's count of executions that died"
    )
    failed_executions: int = Field(description="the same for failed executions")
    lanes: list[LaneOut]
    minutes: list[MinuteOut] = Field(description="oldest first; the last one is in progress")
    totals: TotalsOut
