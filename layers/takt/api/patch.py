"""What a change to a job does to it, as pure functions of the stored job, the change and `now`.

`apply_patch` merges a PATCH into the stored job and applies the rules that follow from it (a job
runs one target or a workflow, a completed job given a new schedule runs again, a rescheduled job
gets its next occurrence), and names the fields the one write must set. It reads no table and no
setting, so every rule is unit-tested without AWS (tests/unit/api/test_patch.py); the checks that
need a table or the deployment's settings (calendars, target region, egress, payload size) run on
its result before the write (takt.api.jobs).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from takt.api.errors import ConflictingStateError, InvalidRequestError
from takt.api.models import JobPatch
from takt.models.records import WORKFLOW_TARGET, JobRecord, JobStatus
from takt.occurrences import catchup_horizon, window_problem
from takt.schedule import ScheduleError, next_after, parse_cron

# The fields that change when, or whether, a job next fires.
SCHEDULE_FIELDS = frozenset(
    {
        "schedule",
        "interval",
        "run_at",
        "time_zone",
        "dst",
        "start_at",
        "end_at",
        "pause_until",
        "jitter",
    }
)
# The fields whose combination decides whether a job's catch-up window can be planned.
WINDOW_FIELDS = frozenset({"catchup", "catchup_window", "interval"})
# A job has exactly one of these; giving one clears the others.
SCHEDULE_KINDS = frozenset({"schedule", "interval", "run_at"})


@dataclass(frozen=True)
class Patched:
    """The job as the write leaves it, and the fields the write sets (the others are kept as
    stored, so a concurrent scheduler advance of fields not named here is not undone)."""

    job: JobRecord
    written: frozenset[str]


def apply_patch(current: JobRecord, patch: JobPatch, now: datetime) -> Patched:
    """`current` changed by `patch` at `now`; 400 or 409 when the change breaks a rule."""
    given = set(patch.model_fields_set) - {"run_late"}
    changes = _changes(patch, given)
    updated = current.model_copy(update=changes)
    updated.status = _status(current, patch, given)
    if updated.schedule is not None:
        validate_cron(updated)
    if (
        current.status == JobStatus.COMPLETED
        and updated.status == JobStatus.ACTIVE
        and not given & SCHEDULE_KINDS
    ):
        raise ConflictingStateError(
            f"job {current.job_id} has completed; give it a new schedule or run_at to run it again"
        )
    written = given | {"updated_at", "version"} | (changes.keys() & {"target", "tasks"})
    if given & WINDOW_FIELDS:
        check_window(updated)
    if "run_at" in given and not patch.run_late:
        check_not_late(updated, now)
    written |= _reschedule(current, updated, given, now)
    updated.version = current.version + 1
    updated.updated_at = now
    if given & SCHEDULE_KINDS:
        written |= SCHEDULE_KINDS
    return Patched(updated, frozenset(written))


def _reschedule(current: JobRecord, updated: JobRecord, given: set[str], now: datetime) -> set[str]:
    """Give `updated` its next occurrence when the patch changed when it fires, or made it
    active again; the fields that then change."""
    reschedule = bool(given & SCHEDULE_FIELDS) or (
        current.status != JobStatus.ACTIVE and updated.status == JobStatus.ACTIVE
    )
    if not reschedule or updated.status != JobStatus.ACTIVE:
        return set()
    # The status too, although it was read as active: the scheduler may have completed a
    # one-off since (a claim runs ahead of the due time), and a job moved to a new time must
    # not stay completed there, never to run (DESIGN invariant 8).
    written = {"next_run_time", "status"}
    if "interval" in given or "start_at" in given:
        updated.anchor = updated.start_at or now
        written.add("anchor")
    updated.next_run_time = first_run(updated, now)
    return written


def _changes(patch: JobPatch, given: set[str]) -> dict[str, Any]:
    """The stored fields the patch sets, with those its choices clear: a target clears the
    tasks and tasks the target (a job runs one or the other), one schedule kind the others."""
    changes: dict[str, Any] = {f: getattr(patch, f) for f in given if f != "status"}
    if patch.tasks is not None:
        changes["target"] = WORKFLOW_TARGET
    elif patch.target is not None:
        changes["tasks"] = None
    if changes.keys() & SCHEDULE_KINDS:
        for kind in SCHEDULE_KINDS:
            changes.setdefault(kind, None)
    return changes


def _status(current: JobRecord, patch: JobPatch, given: set[str]) -> JobStatus:
    """The status the patch leaves: the one it gives, else active again for a completed job
    given a new schedule, else the stored one."""
    if "status" in given and patch.status is not None:
        return JobStatus(patch.status)
    if current.status == JobStatus.COMPLETED and given & SCHEDULE_KINDS:
        return JobStatus.ACTIVE
    return current.status


def validate_cron(job: JobRecord) -> None:
    """400 naming the field when the job's cron expression cannot be evaluated."""
    try:
        parse_cron(job.schedule or "", job.time_zone)
    except ScheduleError as exc:
        raise InvalidRequestError(str(exc), [{"field": exc.field, "message": str(exc)}]) from exc


def check_window(job: JobRecord) -> None:
    """400 naming `catchup_window` when the job's catch-up window cannot be planned
    (`takt.occurrences.window_problem`): accepted, such a job would never run as it says."""
    problem = window_problem(job)
    if problem is not None:
        raise InvalidRequestError(problem, [{"field": "catchup_window", "message": problem}])


def check_not_late(job: JobRecord, now: datetime) -> None:
    """Refuse a `run_at` older than the job's catch-up window: it would run at once, which
    a date years in the past almost never means (`run_late` asks for it explicitly)."""
    if job.run_at is None:
        return
    if job.run_at < catchup_horizon(job, now):
        message = (
            f"run_at is more than the catch-up window ({job.catchup_window}) in the past; "
            "send run_late: true to run it now anyway"
        )
        raise InvalidRequestError(message, [{"field": "run_at", "message": message}])


def first_run(job: JobRecord, now: datetime) -> datetime:
    """The first occurrence from now on; a one-off in the past runs at once (or when its
    pause ends)."""
    if job.run_at is not None:
        return max(job.run_at, job.pause_until or job.run_at)
    try:
        first = next_after(
            job.parsed_schedule(), now, start_at=job.first_allowed, end_at=job.end_at
        )
    except ScheduleError as exc:
        raise InvalidRequestError(str(exc), [{"field": exc.field, "message": str(exc)}]) from exc
    except OverflowError:
        first = None
    if first is None and job.end_at is None:
        field = "start_at" if job.start_at else "schedule"
        message = "the schedule never fires before the end of the year 9999"
        raise InvalidRequestError(message, [{"field": field, "message": message}])
    if first is None:
        raise InvalidRequestError(
            "the schedule never fires between start_at and end_at",
            [{"field": "end_at", "message": "no occurrence before end_at"}],
        )
    return first
