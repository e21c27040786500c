"""The executions table: idempotent create, fenced transitions, history paging, the open index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.models.ids import to_ms
from takt.models.records import ExecState, JobRecord
from takt.store.errors import ExecutionConflictError, NotFoundError
from takt.store.executions import Transition
from takt.wiring import Services
from tests.support.jobs import TENANT, make_execution, make_job

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
RUNNING = {"state": ExecState.RUNNING, "lease_token": "tok-1", "lease_expires_at": 1}


@pytest.fixture
def job(svc: Services, clock: ManualClock) -> JobRecord:
    job = make_job(now=clock.now(), next_run_time=T0, schedule="* * * * *")
    svc.jobs.create(job)
    return job


def _open_ids(svc: Services, until_ms: int) -> set[str | None]:
    return {
        item.execution_id
        for shard in range(svc.executions.open_shards)
        for item in svc.executions.open_candidates(str(shard), until_ms)
    }


def test_create_is_idempotent_and_keeps_the_first_record(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    first = make_execution(job, T0, clock.now())
    assert svc.executions.create(first, check_at_ms=None) is True

    second = first.model_copy(update={"state": ExecState.SKIPPED, "reason": "late"})
    assert svc.executions.create(second, check_at_ms=None) is False

    stored = svc.executions.get(TENANT, first.execution_id)
    assert (stored.state, stored.reason) == (ExecState.PENDING, None)


def test_get_of_a_malformed_execution_id_is_not_found(svc: Services) -> None:
    with pytest.raises(NotFoundError):
        svc.executions.get(TENANT, "not-an-execution")


def test_transition_with_matching_fence_applies(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now())
    svc.executions.create(record, check_at_ms=None)

    updated = svc.executions.transition(
        TENANT,
        record.execution_id,
        Transition(expect={"state": ExecState.PENDING, "attempt": 1}, set=RUNNING),
    )

    assert (updated.state, updated.lease_token) == (ExecState.RUNNING, "tok-1")


def test_transition_for_the_wrong_attempt_is_a_conflict_carrying_the_current_item(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now(), attempt=2)
    svc.executions.create(record, check_at_ms=None)

    with pytest.raises(ExecutionConflictError) as caught:
        svc.executions.transition(
            TENANT,
            record.execution_id,
            Transition(expect={"state": ExecState.PENDING, "attempt": 1}, set=RUNNING),
        )

    assert caught.value.current.attempt == 2
    assert svc.executions.get(TENANT, record.execution_id).state == ExecState.PENDING


def test_transition_with_a_stale_lease_token_is_a_conflict(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now())
    svc.executions.create(record, check_at_ms=None)
    svc.executions.transition(
        TENANT,
        record.execution_id,
        Transition(expect={"state": ExecState.PENDING, "attempt": 1}, set=RUNNING),
    )

    with pytest.raises(ExecutionConflictError) as caught:
        svc.executions.transition(
            TENANT,
            record.execution_id,
            Transition(
                expect={"state": ExecState.RUNNING, "attempt": 1, "lease_token": "tok-0"},
                set={"state": ExecState.SUCCEEDED},
            ),
        )

    assert caught.value.current.lease_token == "tok-1"
    assert svc.executions.get(TENANT, record.execution_id).state == ExecState.RUNNING


def test_transition_of_a_missing_execution_is_not_found(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now())

    with pytest.raises(NotFoundError):
        svc.executions.transition(
            TENANT, record.execution_id, Transition(expect={"attempt": 1}, set=RUNNING)
        )


def test_transition_appends_attempts_and_adds_counters(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now())
    svc.executions.create(record, check_at_ms=None)

    for n in (1, 2):
        updated = svc.executions.transition(
            TENANT,
            record.execution_id,
            Transition(
                expect={"attempt": 1},
                append_attempt={"attempt": n, "outcome": "retry"},
                add={"heartbeat_seq": 1},
            ),
        )

    assert [a.attempt for a in updated.attempts] == [1, 2]
    assert updated.heartbeat_seq == 2


def test_record_fenced_counts_without_changing_the_state(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now())
    svc.executions.create(record, check_at_ms=None)

    svc.executions.record_fenced(TENANT, record.execution_id)
    svc.executions.record_fenced(TENANT, record.execution_id)

    stored = svc.executions.get(TENANT, record.execution_id)
    assert (stored.fenced_reports, stored.state) == (2, ExecState.PENDING)


def test_record_fenced_on_an_execution_that_is_gone_counts_nowhere(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    gone = make_execution(job, T0, clock.now()).execution_id

    svc.executions.record_fenced(TENANT, gone)

    with pytest.raises(NotFoundError):
        svc.executions.get(TENANT, gone)


def test_list_for_job_pages_newest_first(svc: Services, clock: ManualClock, job: JobRecord) -> None:
    times = [T0 + timedelta(minutes=i) for i in range(5)]
    for t in times:
        svc.executions.create(make_execution(job, t, clock.now()), check_at_ms=None)
    other = make_job(now=clock.now(), next_run_time=T0)
    svc.executions.create(make_execution(other, T0, clock.now()), check_at_ms=None)

    seen: list[datetime] = []
    cursor: str | None = None
    while True:
        page, cursor = svc.executions.list_for_job(TENANT, job.job_id, limit=2, cursor=cursor)
        assert len(page) <= 2
        seen.extend(r.scheduled_time for r in page)
        if cursor is None:
            break

    assert seen == sorted(times, reverse=True)


def test_a_cursor_of_another_job_reads_only_this_jobs_history(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    other = make_job(now=clock.now(), next_run_time=T0)
    for t in (T0, T0 + timedelta(minutes=1)):
        svc.executions.create(make_execution(other, t, clock.now()), check_at_ms=None)
    _, cursor = svc.executions.list_for_job(TENANT, other.job_id, limit=1, cursor=None)
    assert cursor is not None

    page, _ = svc.executions.list_for_job(TENANT, job.job_id, limit=10, cursor=cursor)

    assert all(record.job_id == job.job_id for record in page)


def test_a_cursor_that_is_not_an_occurrence_is_malformed(svc: Services, job: JobRecord) -> None:
    with pytest.raises(ValueError, match="malformed cursor"):
        svc.executions.list_for_job(TENANT, job.job_id, limit=1, cursor="e30")


def test_an_open_execution_is_a_candidate_once_its_check_time_passes(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now())
    check_at = to_ms(clock.now() + timedelta(seconds=30))
    svc.executions.create(record, check_at_ms=check_at)

    assert record.execution_id not in _open_ids(svc, check_at - 1)
    assert record.execution_id in _open_ids(svc, check_at)


def test_a_skipped_execution_never_enters_the_open_index(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now(), state=ExecState.SKIPPED)

    svc.executions.create(record, check_at_ms=to_ms(clock.now()))

    assert _open_ids(svc, to_ms(clock.now() + timedelta(days=1))) == set()


def test_a_terminal_transition_removing_the_open_attributes_leaves_the_index(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = make_execution(job, T0, clock.now())
    svc.executions.create(record, check_at_ms=to_ms(clock.now()))
    assert record.execution_id in _open_ids(svc, to_ms(clock.now()))

    svc.executions.transition(
        TENANT,
        record.execution_id,
        Transition(
            expect={"attempt": 1},
            set={"state": ExecState.CANCELLED},
            remove=("open_shard", "check_at"),
        ),
    )

    assert _open_ids(svc, to_ms(clock.now() + timedelta(days=1))) == set()
