"""The jobs table: create, read, page, version-fenced definition updates, advance, delete."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from takt.clock import ManualClock
from takt.models.records import JobStatus
from takt.store import batch
from takt.store.errors import ConflictError, NotFoundError
from takt.store.jobs import Advance
from takt.wiring import Services
from tests.support.faults import Throttled
from tests.support.jobs import TENANT, make_job

T0 = datetime(2026, 3, 2, 12, 5, tzinfo=UTC)


def test_created_job_reads_back_equal(svc: Services, clock: ManualClock) -> None:
    job = make_job(now=clock.now(), next_run_time=T0, name="nightly", payload={"x": 1.5})

    svc.jobs.create(job)

    assert svc.jobs.get(TENANT, job.job_id) == job


def test_create_with_a_taken_id_is_a_conflict(svc: Services, clock: ManualClock) -> None:
    job = make_job(now=clock.now(), next_run_time=T0)
    svc.jobs.create(job)

    with pytest.raises(ConflictError):
        svc.jobs.create(job.model_copy(update={"name": "other"}))
    assert svc.jobs.get(TENANT, job.job_id).name is None


def test_get_of_another_tenants_job_is_not_found(svc: Services, clock: ManualClock) -> None:
    job = make_job(now=clock.now(), next_run_time=T0)
    svc.jobs.create(job)

    with pytest.raises(NotFoundError):
        svc.jobs.get("tenant-b", job.job_id)


def test_list_pages_through_every_job_in_id_order(svc: Services, clock: ManualClock) -> None:
    jobs = [make_job(now=clock.now(), next_run_time=T0) for _ in range(5)]
    for job in jobs:
        svc.jobs.create(job)
    svc.jobs.create(make_job(now=clock.now(), next_run_time=T0, tenant_id="tenant-b"))

    seen: list[str] = []
    pages = 0
    cursor: str | None = None
    while True:
        page, cursor = svc.jobs.list(TENANT, limit=2, cursor=cursor)
        pages += 1
        assert len(page) <= 2
        seen.extend(j.job_id for j in page)
        if cursor is None:
            break

    assert seen == sorted(j.job_id for j in jobs)
    assert pages == 3


def test_a_cursor_from_another_tenant_reads_only_the_callers_jobs(
    svc: Services, clock: ManualClock
) -> None:
    for _ in range(2):
        svc.jobs.create(make_job(now=clock.now(), next_run_time=T0, tenant_id="tenant-b"))
    _, cursor = svc.jobs.list("tenant-b", limit=1, cursor=None)
    assert cursor is not None

    page, _ = svc.jobs.list(TENANT, limit=10, cursor=cursor)

    assert page == []


@pytest.mark.parametrize("cursor", ["s", "eyJhIjogMX0", "job_" + "Z" * 26, "job_1"])
def test_a_cursor_that_is_not_a_job_id_is_malformed(svc: Services, cursor: str) -> None:
    with pytest.raises(ValueError, match="malformed cursor"):
        svc.jobs.list(TENANT, limit=1, cursor=cursor)


def test_update_definition_at_the_expected_version_writes_it(
    svc: Services, clock: ManualClock
) -> None:
    job = make_job(now=clock.now(), next_run_time=T0)
    svc.jobs.create(job)

    svc.jobs.update_definition(
        job.model_copy(update={"name": "renamed", "version": 2}), 1, {"name"}
    )

    stored = svc.jobs.get(TENANT, job.job_id)
    assert (stored.name, stored.version) == ("renamed", 2)


def test_update_definition_at_a_stale_version_is_a_conflict(
    svc: Services, clock: ManualClock
) -> None:
    job = make_job(now=clock.now(), next_run_time=T0)
    svc.jobs.create(job)
    svc.jobs.update_definition(job.model_copy(update={"name": "first", "version": 2}), 1, {"name"})

    with pytest.raises(ConflictError):
        svc.jobs.update_definition(
            job.model_copy(update={"name": "second", "version": 2}), 1, {"name"}
        )

    assert svc.jobs.get(TENANT, job.job_id).name == "first"


def test_update_definition_leaves_fields_it_was_not_given(
    svc: Services, clock: ManualClock
) -> None:
    job = make_job(now=clock.now(), next_run_time=T0, schedule="*/5 * * * *")
    svc.jobs.create(job)
    later = T0 + timedelta(minutes=5)
    assert svc.jobs.advance(job, T0, later).applied

    # A copy read before the scheduler advanced the job: its next_run_time is stale.
    svc.jobs.update_definition(job.model_copy(update={"name": "x", "version": 2}), 1, {"name"})

    assert svc.jobs.get(TENANT, job.job_id).next_run_time == later


def test_update_definition_of_a_missing_job_is_not_found(svc: Services, clock: ManualClock) -> None:
    job = make_job(now=clock.now(), next_run_time=T0)

    with pytest.raises(NotFoundError):
        svc.jobs.update_definition(job, 1, {"name"})


def test_advance_moves_only_a_job_still_at_the_fired_occurrence(
    svc: Services, clock: ManualClock
) -> None:
    job = make_job(now=clock.now(), next_run_time=T0, schedule="*/5 * * * *")
    svc.jobs.create(job)
    later = T0 + timedelta(minutes=5)

    assert svc.jobs.advance(job, T0, later).applied
    again = svc.jobs.advance(job, T0, later + timedelta(minutes=5))
    assert not again.applied
    assert again.current is not None
    assert (again.current.next_run_time, again.current.version) == (later, 1)
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == later


def test_advance_does_not_move_a_job_edited_since_it_was_read(
    svc: Services, clock: ManualClock
) -> None:
    job = make_job(now=clock.now(), next_run_time=T0, schedule="0 * * * *")
    svc.jobs.create(job)
    # An edit that keeps next_run_time where it was: a new schedule whose first occurrence is
    # the fired one. Only the version tells the claim's copy is stale.
    edited = job.model_copy(update={"schedule": "* * * * *", "version": 2})
    svc.jobs.update_definition(edited, 1, {"schedule"})

    outcome = svc.jobs.advance(job, T0, T0 + timedelta(hours=1))

    assert not outcome.applied, (
        "the claim's advance is fenced on the version it read (edits decide)"
    )
    assert outcome.current is not None
    assert (outcome.current.version, outcome.current.schedule) == (2, "* * * * *")
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == T0


def test_advance_of_a_deleted_job_says_it_is_gone(svc: Services, clock: ManualClock) -> None:
    job = make_job(now=clock.now(), next_run_time=T0)
    svc.jobs.create(job)
    svc.jobs.delete(TENANT, job.job_id)

    assert svc.jobs.advance(job, T0, None) == Advance(False, None)


def test_advance_past_the_last_occurrence_completes_the_job(
    svc: Services, clock: ManualClock
) -> None:
    job = make_job(now=clock.now(), next_run_time=T0)
    svc.jobs.create(job)

    assert svc.jobs.advance(job, T0, None).applied

    stored = svc.jobs.get(TENANT, job.job_id)
    assert (stored.status, stored.next_run_time) == (JobStatus.COMPLETED, None)


def test_advance_does_not_move_a_paused_job(svc: Services, clock: ManualClock) -> None:
    job = make_job(now=clock.now(), next_run_time=T0, status=JobStatus.PAUSED)
    svc.jobs.create(job)

    assert not svc.jobs.advance(job, T0, T0 + timedelta(minutes=5)).applied
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == T0


def test_delete_removes_the_job(svc: Services, clock: ManualClock) -> None:
    job = make_job(now=clock.now(), next_run_time=T0)
    svc.jobs.create(job)

    svc.jobs.delete(TENANT, job.job_id)

    with pytest.raises(NotFoundError):
        svc.jobs.get(TENANT, job.job_id)


def test_delete_of_a_missing_job_is_not_found(svc: Services) -> None:
    with pytest.raises(NotFoundError):
        svc.jobs.delete(TENANT, "job_missing")


def test_batch_get_waits_then_asks_again_for_the_jobs_a_throttled_read_left(
    svc: Services, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = [make_job(now=clock.now(), next_run_time=T0) for _ in range(6)]
    for job in jobs:
        svc.jobs.create(job)
    throttled = Throttled(svc.clients.dynamodb)
    store = copy.copy(svc.jobs)
    store._db = throttled  # type: ignore[assignment]
    waits: list[float] = []
    monkeypatch.setattr(batch, "time", SimpleNamespace(sleep=waits.append))

    found = store.batch_get([(job.tenant_id, job.job_id) for job in jobs])

    assert {job_id for _, job_id in found} == {job.job_id for job in jobs}
    assert throttled.batch_calls == 2
    # Not at once: a throttled table meets the same throttle again (AWS's guidance).
    assert len(waits) == 1 and waits[0] > 0
