"""`apply_patch`: what a PATCH does to a stored job, decided without a table or AWS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from takt.api.errors import ConflictingStateError, InvalidRequestError
from takt.api.models import JobPatch
from takt.api.patch import apply_patch
from takt.models.records import WORKFLOW_TARGET, JobRecord, JobStatus

NOW = datetime(2026, 3, 1, 12, 0, 30, tzinfo=UTC)
CREATED = NOW - timedelta(days=3)


def _job(**fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "tenant_id": "t",
        "job_id": "job_1",
        "schedule": "0 * * * *",
        "anchor": CREATED,
        "target": "https://svc.example/hook",
        "version": 4,
        "next_run_time": datetime(2026, 3, 1, 13, tzinfo=UTC),
        "created_at": CREATED,
        "updated_at": CREATED,
    }
    return JobRecord(**(base | fields))


def _patch(**fields: Any) -> JobPatch:
    return JobPatch.model_validate(fields)


def test_a_patch_writes_only_what_it_names_plus_the_version() -> None:
    patched = apply_patch(_job(), _patch(name="nightly"), NOW)

    assert patched.job.name == "nightly"
    assert patched.job.version == 5
    assert patched.job.updated_at == NOW
    assert patched.written == {"name", "updated_at", "version"}
    assert patched.job.next_run_time == datetime(2026, 3, 1, 13, tzinfo=UTC)


def test_a_new_schedule_clears_the_other_kinds_and_moves_the_next_run() -> None:
    patched = apply_patch(_job(), _patch(interval="5m"), NOW)

    assert (patched.job.schedule, patched.job.interval) == (None, "5m")
    assert patched.job.anchor == NOW  # an interval counts from when it was given
    assert patched.job.next_run_time == NOW + timedelta(minutes=5)
    assert {"schedule", "interval", "run_at", "anchor", "next_run_time"} <= patched.written


def test_tasks_replace_the_target_and_a_target_the_tasks() -> None:
    tasks = [{"id": "a", "target": "https://svc.example/a"}]
    to_workflow = apply_patch(_job(), _patch(tasks=tasks), NOW)
    back = apply_patch(to_workflow.job, _patch(target="https://svc.example/b"), NOW)

    assert to_workflow.job.target == WORKFLOW_TARGET
    assert {"tasks", "target"} <= to_workflow.written
    assert back.job.tasks is None
    assert {"tasks", "target"} <= back.written


def test_pausing_keeps_the_next_run_and_resuming_computes_it_again() -> None:
    paused = apply_patch(_job(), _patch(status="paused"), NOW)
    resumed = apply_patch(paused.job, _patch(status="active"), NOW + timedelta(hours=5))

    assert paused.job.status == JobStatus.PAUSED
    assert "next_run_time" not in paused.written
    assert resumed.job.next_run_time == datetime(2026, 3, 1, 18, tzinfo=UTC)
    assert {"status", "next_run_time"} <= resumed.written


def test_a_completed_job_given_a_new_run_at_runs_again() -> None:
    done = _job(schedule=None, run_at=CREATED, status=JobStatus.COMPLETED, next_run_time=None)

    patched = apply_patch(done, _patch(run_at=NOW + timedelta(hours=1)), NOW)

    assert patched.job.status == JobStatus.ACTIVE
    assert patched.job.next_run_time == NOW + timedelta(hours=1)


def test_a_completed_job_resumed_without_a_schedule_is_a_conflict() -> None:
    done = _job(status=JobStatus.COMPLETED)

    with pytest.raises(ConflictingStateError, match="has completed"):
        apply_patch(done, _patch(status="active"), NOW)


def test_a_run_at_older_than_the_catch_up_window_is_refused_unless_run_late() -> None:
    old = NOW - timedelta(hours=2)

    with pytest.raises(InvalidRequestError) as refused:
        apply_patch(_job(), _patch(run_at=old), NOW)
    late = apply_patch(_job(), _patch(run_at=old, run_late=True), NOW)

    assert refused.value.errors == [{"field": "run_at", "message": refused.value.detail}]
    assert late.job.next_run_time == old
    assert "run_late" not in late.written


def test_a_schedule_that_never_fires_is_refused_naming_its_field() -> None:
    with pytest.raises(InvalidRequestError) as refused:
        apply_patch(_job(), _patch(schedule="0 0 30 2 *"), NOW)

    assert refused.value.errors is not None
    assert refused.value.errors[0]["field"] == "schedule"


def test_the_stored_job_is_left_as_it_was() -> None:
    current = _job()

    apply_patch(current, _patch(interval="5m", name="x"), NOW)

    assert current == _job()
