"""The lease-time verdict on an occurrence claimed ahead: the job as it now is decides it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from takt.models.lanes import LaneMessage
from takt.models.records import JobRecord, JobStatus
from takt.worker.recheck import claimed_ahead, judge

DUE = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
TARGET = "https://example.com/hook"


def _message(*, claimed_at: datetime | None = None, job_version: int | None = 1) -> LaneMessage:
    return LaneMessage(
        tenant_id="t",
        job_id="job_1",
        execution_id="job_1.x",
        attempt=1,
        scheduled_time=DUE,
        claimed_at=claimed_at or DUE - timedelta(seconds=1),
        job_version=job_version,
    )


def _job(**fields: object) -> JobRecord:
    values: dict[str, object] = {
        "tenant_id": "t",
        "job_id": "job_1",
        "anchor": DUE - timedelta(hours=1),
        "target": TARGET,
        "created_at": DUE - timedelta(hours=1),
        "updated_at": DUE - timedelta(hours=1),
        "version": 1,
    }
    values.update(fields)
    if "schedule" not in values and "interval" not in values:
        values.setdefault("run_at", DUE)
    return JobRecord.model_validate(values)


def test_a_deleted_job_skips_its_occurrence() -> None:
    verdict = judge(None, _message())

    assert verdict.skip_reason is not None
    assert "deleted" in verdict.skip_reason


def test_an_unedited_job_runs_as_claimed() -> None:
    # A one-off is completed by the claim that fired it: still its own occurrence.
    verdict = judge(_job(status=JobStatus.COMPLETED), _message())

    assert (verdict.skip_reason, verdict.job) == (None, None)


def test_a_paused_job_skips_its_occurrence() -> None:
    verdict = judge(_job(status=JobStatus.PAUSED, version=2), _message())

    assert verdict.skip_reason is not None
    assert "paused" in verdict.skip_reason


def test_a_one_off_moved_to_another_time_skips_the_old_one() -> None:
    moved = _job(run_at=DUE + timedelta(minutes=10), version=2)

    verdict = judge(moved, _message())

    assert verdict.skip_reason is not None
    assert "version 1 to 2" in verdict.skip_reason
    assert verdict.skip_reason.endswith("no longer fires at 2026-03-02T13:00:00Z")


def test_a_one_off_edited_but_still_due_then_runs_as_it_now_is() -> None:
    edited = _job(status=JobStatus.COMPLETED, payload={"new": True}, version=2)

    verdict = judge(edited, _message())

    assert verdict.skip_reason is None
    assert verdict.job is edited


def test_a_new_schedule_that_keeps_the_instant_runs_it_as_the_job_now_is() -> None:
    every_minute = _job(schedule="* * * * *", version=2)

    assert judge(every_minute, _message()).job is every_minute


def test_a_new_schedule_without_the_instant_skips_it() -> None:
    half_past = _job(schedule="30 * * * *", version=2)

    verdict = judge(half_past, _message())

    assert verdict.skip_reason is not None
    assert "no longer fires" in verdict.skip_reason


def test_a_pause_until_past_the_instant_skips_it() -> None:
    resting = _job(schedule="* * * * *", pause_until=DUE + timedelta(minutes=5), version=2)

    assert judge(resting, _message()).skip_reason is not None


def test_an_interval_job_fires_on_its_anchor_grid_only() -> None:
    on_grid = _job(interval="30m", anchor=DUE - timedelta(hours=1), version=2)
    off_grid = _job(interval="30m", anchor=DUE - timedelta(minutes=50), version=2)

    assert judge(on_grid, _message()).job is on_grid
    assert judge(off_grid, _message()).skip_reason is not None


def test_only_a_claim_made_before_the_due_time_and_margin_is_checked() -> None:
    margin = 2.0

    assert claimed_ahead(_message(claimed_at=DUE - timedelta(seconds=30)), margin)
    assert claimed_ahead(_message(claimed_at=DUE + timedelta(seconds=1.9)), margin)
    assert not claimed_ahead(_message(claimed_at=DUE + timedelta(seconds=2)), margin)
    assert not claimed_ahead(_message(job_version=None), margin)
