"""The claimer and the ticker dispatching what is due: once, advancing, and never twice."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.clock import ManualClock
from takt.dispatch.claimer import ClaimResult
from takt.models.records import ExecState, JobRecord, JobStatus
from takt.store.due import minute_of, shard_of
from takt.wiring import Services
from tests.support.history import Expect, HistoryChecker
from tests.support.indexer import index_due
from tests.support.jobs import TENANT, job_id_in_shard, make_execution, make_job, store_job
from tests.support.lanes import drain

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
D = NOON + timedelta(minutes=1)


def _executions(svc: Services, job_id: str) -> list[tuple[datetime, ExecState]]:
    page, _ = svc.executions.list_for_job(TENANT, job_id, limit=100, cursor=None)
    return [(r.scheduled_time, r.state) for r in page]


def _shard(svc: Services, job: JobRecord) -> int:
    return shard_of(job.tenant_id, job.job_id, svc.due.shards)


def _cron_jobs_in_shard(
    svc: Services, clock: ManualClock, count: int, shard: int = 0
) -> list[JobRecord]:
    return [
        store_job(
            svc,
            make_job(
                now=clock.now(),
                next_run_time=D,
                schedule="* * * * *",
                job_id=job_id_in_shard(TENANT, shard, svc.due.shards),
            ),
            clock.now(),
        )
        for _ in range(count)
    ]


def test_a_one_off_job_due_now_is_dispatched_once_and_completed(
    svc: Services, clock: ManualClock
) -> None:
    job, created = JobService(svc.api).create(
        TENANT, JobCreate(run_at=clock.now(), target="https://example.com/hook"), None
    )
    assert created
    index_due(svc)

    first = svc.ticker.tick(clock.now())
    clock.advance(1)
    second = svc.ticker.tick(clock.now())

    assert (first.total.dispatched, second.total.dispatched) == (1, 0)
    assert _executions(svc, job.job_id) == [(job.run_at, ExecState.PENDING)]
    messages = drain(svc, "default")
    assert [(m.job_id, m.attempt) for m in messages] == [(job.job_id, 1)]
    stored = svc.jobs.get(TENANT, job.job_id)
    assert (stored.status, stored.next_run_time) == (JobStatus.COMPLETED, None)
    assert HistoryChecker(svc).due_items() == []


def test_a_job_is_sent_to_the_lane_of_its_priority(svc: Services, clock: ManualClock) -> None:
    job = store_job(svc, make_job(now=clock.now(), next_run_time=NOON, priority="high"), NOON)

    svc.ticker.tick(clock.now())

    assert [m.job_id for m in drain(svc, "high")] == [job.job_id]
    assert drain(svc, "default") == []


def test_a_cron_job_advances_to_its_next_occurrence_with_a_new_due_item(
    svc: Services, clock: ManualClock
) -> None:
    due = NOON + timedelta(minutes=5)
    job = store_job(
        svc, make_job(now=clock.now(), next_run_time=due, schedule="*/5 * * * *"), clock.now()
    )
    clock.set(due + timedelta(milliseconds=200))

    svc.ticker.tick(clock.now())

    after = due + timedelta(minutes=5)
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == after
    assert [(i.job_id, i.due) for i in HistoryChecker(svc).due_items()] == [(job.job_id, after)]
    assert _executions(svc, job.job_id) == [(due, ExecState.PENDING)]


def test_a_job_due_beyond_the_dispatch_horizon_is_left_alone(
    svc: Services, clock: ManualClock
) -> None:
    job = store_job(svc, make_job(now=clock.now(), next_run_time=D), clock.now())
    clock.set(D - timedelta(seconds=svc.settings.dispatch_ahead_sec, milliseconds=1))

    result = svc.ticker.tick(clock.now())

    assert result.total.due == 0
    assert _executions(svc, job.job_id) == []
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == D


def test_a_job_due_within_the_dispatch_horizon_is_dispatched_ahead_of_its_time(
    svc: Services, clock: ManualClock
) -> None:
    job = store_job(svc, make_job(now=clock.now(), next_run_time=D), clock.now())
    clock.set(D - timedelta(seconds=svc.settings.dispatch_ahead_sec / 2))

    result = svc.ticker.tick(clock.now())

    assert result.total.dispatched == 1
    assert _executions(svc, job.job_id) == [(D, ExecState.PENDING)]
    assert svc.jobs.get(TENANT, job.job_id).next_run_time is None  # a one-off, now done


def test_claiming_the_same_partition_twice_at_the_same_instant_dispatches_once(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    jobs = _cron_jobs_in_shard(svc, clock, 3)
    now = D + timedelta(milliseconds=300)

    first = svc.claimer.claim(minute_of(D), 0, now)
    second = svc.claimer.claim(minute_of(D), 0, now)

    assert (first.dispatched, second.dispatched) == (3, 0)
    report = checker.check(Expect(j.job_id, [D], D + timedelta(minutes=1)) for j in jobs)
    assert report.problems() == []


def test_concurrent_claims_of_one_partition_create_one_execution_per_occurrence(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    jobs = _cron_jobs_in_shard(svc, clock, 8)
    now = D + timedelta(milliseconds=300)
    claimers = 4
    start = threading.Barrier(claimers)

    def claim() -> ClaimResult:
        start.wait()  # all claimers read the partition at the same instant
        return svc.claimer.claim(minute_of(D), 0, now)

    with ThreadPoolExecutor(max_workers=claimers) as pool:
        results = [f.result(timeout=60) for f in [pool.submit(claim) for _ in range(claimers)]]

    assert len(results) == claimers
    assert sum(r.dispatched for r in results) >= 8  # every occurrence sent at least once
    report = checker.check(Expect(j.job_id, [D], D + timedelta(minutes=1)) for j in jobs)
    assert report.problems() == []


def test_overlap_skip_records_skipped_while_the_previous_run_is_open(
    svc: Services, clock: ManualClock
) -> None:
    job = make_job(now=clock.now(), next_run_time=D, schedule="* * * * *", overlap="skip")
    previous = make_execution(job, NOON, clock.now(), state=ExecState.RUNNING)
    svc.executions.create(previous, check_at_ms=None)
    store_job(svc, job.model_copy(update={"active_execution": previous.execution_id}), NOON)
    clock.set(D + timedelta(milliseconds=100))

    result = svc.ticker.tick(clock.now())

    assert (result.total.dispatched, result.total.skipped) == (0, 1), (
        "overlap skip: an occurrence due while the job's slot is held by an open run is skipped"
    )
    skipped = svc.executions.get(TENANT, f"{job.job_id}.20260302T120100000Z")
    assert (skipped.state, skipped.reason) == (ExecState.SKIPPED, "overlap=skip")
    stored = svc.jobs.get(TENANT, job.job_id)
    assert stored.next_run_time == D + timedelta(minutes=1)
    assert stored.active_execution == previous.execution_id
    assert drain(svc) == []


def test_overlap_skip_runs_and_takes_the_slot_when_the_previous_run_ended(
    svc: Services, clock: ManualClock
) -> None:
    job = make_job(now=clock.now(), next_run_time=D, schedule="* * * * *", overlap="skip")
    previous = make_execution(job, NOON, clock.now(), state=ExecState.SUCCEEDED)
    svc.executions.create(previous, check_at_ms=None)
    store_job(svc, job.model_copy(update={"active_execution": previous.execution_id}), NOON)
    clock.set(D + timedelta(milliseconds=100))

    result = svc.ticker.tick(clock.now())

    assert (result.total.dispatched, result.total.skipped) == (1, 0), (
        "overlap skip: a slot whose run has ended is free, so the occurrence runs"
    )
    [message] = drain(svc)
    assert svc.jobs.get(TENANT, job.job_id).active_execution == message.execution_id, (
        "overlap skip: the run the claim starts takes the job's slot"
    )
    assert svc.executions.get(TENANT, message.execution_id).state == ExecState.PENDING


STALE_CASES = ["paused", "deleted", "moved"]


def _stale_setup(svc: Services, clock: ManualClock, case: str) -> JobRecord:
    """A due item at D that its job no longer points at, written 10 s before D."""
    clock.set(D - timedelta(seconds=10))
    now = clock.now()
    job = make_job(now=now, next_run_time=D, schedule="* * * * *")
    svc.due.put(TENANT, job.job_id, D, now)
    if case == "paused":
        svc.jobs.create(job.model_copy(update={"status": JobStatus.PAUSED}))
    elif case == "moved":
        moved = D + timedelta(minutes=2)
        store_job(svc, job.model_copy(update={"next_run_time": moved}), now)
    return job


@pytest.mark.parametrize("case", STALE_CASES)
def test_a_young_stale_due_item_is_left_for_the_grace_period(
    svc: Services, clock: ManualClock, case: str
) -> None:
    job = _stale_setup(svc, clock, case)

    result = svc.claimer.claim(minute_of(D), _shard(svc, job), D)

    assert (result.left, result.stale, result.dispatched) == (1, 0, 0)
    assert any(i.due == D for i in HistoryChecker(svc).due_items())
    assert _executions(svc, job.job_id) == []


@pytest.mark.parametrize("case", STALE_CASES)
def test_a_stale_due_item_is_deleted_after_the_grace_period(
    svc: Services, clock: ManualClock, case: str
) -> None:
    job = _stale_setup(svc, clock, case)
    grace = svc.settings.due_grace_sec
    now = D - timedelta(seconds=10) + timedelta(seconds=grace)

    result = svc.claimer.claim(minute_of(D), _shard(svc, job), now)

    assert (result.left, result.stale, result.dispatched) == (0, 1, 0)
    remaining = [(i.job_id, i.due) for i in HistoryChecker(svc).due_items()]
    assert (job.job_id, D) not in remaining
    if case == "moved":  # the job's own, current item stays
        assert remaining == [(job.job_id, D + timedelta(minutes=2))]
    assert _executions(svc, job.job_id) == []


def test_a_job_whose_schedule_cannot_be_evaluated_does_not_block_its_partition(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    [good] = _cron_jobs_in_shard(svc, clock, 1)
    # A stored definition the schedule library no longer accepts (say, after an upgrade).
    broken = make_job(
        now=clock.now(),
        next_run_time=D,
        schedule="61 * * * *",
        job_id=job_id_in_shard(TENANT, 0, svc.due.shards),
    )
    store_job(svc, broken, clock.now())

    result = svc.claimer.claim(minute_of(D), 0, D)

    assert (result.dispatched, result.left, result.quarantined) == (1, 0, 1)
    report = checker.check([Expect(good.job_id, [D], D + timedelta(minutes=1))])
    assert report.problems() == []
    assert _executions(svc, broken.job_id) == []
    # Parked in quarantine, out of the due index: no later claim meets it again.
    assert (broken.job_id, D) not in {(i.job_id, i.due) for i in checker.due_items()}
    [record] = svc.quarantine.list()
    assert record.key == {"tenant_id": TENANT, "job_id": broken.job_id}
