"""The watchdog: puts back what a dead worker or a lost message left open, and only after the
clock margin (DESIGN invariant 5); every action is fenced on what it read."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.models.ids import format_time, to_ms
from takt.models.lanes import Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord, RetryPolicy
from takt.store.executions import Transition
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring import Services
from tests.support.faults import interleave
from tests.support.jobs import TENANT, make_execution, make_job, store_execution
from tests.support.lanes import delayed_count, drain
from tests.support.receiver import Receiver

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def job(svc: Services, clock: ManualClock) -> JobRecord:
    job = make_job(
        now=clock.now(), next_run_time=None, run_at=NOON, retry=RetryPolicy(max_attempts=3)
    )
    svc.jobs.create(job)
    return job


def _pending(
    svc: Services, job: JobRecord, clock: ManualClock, attempt: int = 1
) -> ExecutionRecord:
    return store_execution(
        svc, make_execution(job, NOON, clock.now(), attempt=attempt), clock.now()
    )


def _lease(svc: Services, record: ExecutionRecord, clock: ManualClock) -> ExecutionRecord:
    """Take the lease as a worker does, for a worker that then dies and never heartbeats."""
    expires = to_ms(clock.now() + timedelta(seconds=svc.settings.lease_sec))
    return svc.executions.transition(
        TENANT,
        record.execution_id,
        Transition(
            expect={"state": ExecState.PENDING, "attempt": record.attempt},
            set={
                "state": ExecState.RUNNING,
                "lease_token": uuid.uuid4().hex,
                "worker_id": "w-dead",
                "lease_expires_at": expires,
                "check_at": expires,
                "started_at": format_time(clock.now()),
            },
        ),
    )


def _get(svc: Services, record: ExecutionRecord) -> ExecutionRecord:
    return svc.executions.get(TENANT, record.execution_id)


def _just_before_margin(svc: Services, clock: ManualClock, instant: datetime) -> None:
    clock.set(instant + timedelta(seconds=svc.settings.clock_margin_sec - 0.5))


def _just_after_margin(svc: Services, clock: ManualClock, instant: datetime) -> None:
    clock.set(instant + timedelta(seconds=svc.settings.clock_margin_sec + 0.5))


def test_a_pending_execution_is_not_resent_before_its_check_time_plus_the_margin(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    _pending(svc, job, clock)
    _just_before_margin(svc, clock, NOON + timedelta(seconds=svc.settings.pending_resend_after_sec))

    result = svc.watchdog.sweep(clock.now())

    assert result.resent == 0
    assert drain(svc) == []


def test_a_pending_execution_whose_message_was_lost_is_resent(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = _pending(svc, job, clock)
    _just_after_margin(svc, clock, NOON + timedelta(seconds=svc.settings.pending_resend_after_sec))

    result = svc.watchdog.sweep(clock.now())

    assert result.resent == 1
    assert [(m.execution_id, m.attempt) for m in drain(svc)] == [(record.execution_id, 1)]
    # It looks again only after another resend period, not on every sweep.
    assert svc.watchdog.sweep(clock.now()).resent == 0
    assert _get(svc, record).state == ExecState.PENDING


def test_an_expired_lease_is_not_reclaimed_before_the_margin(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = _lease(svc, _pending(svc, job, clock), clock)
    assert record.lease_expires_at is not None
    _just_before_margin(svc, clock, NOON + timedelta(seconds=svc.settings.lease_sec))

    result = svc.watchdog.sweep(clock.now())

    assert result.lease_expired == 0
    assert _get(svc, record).state == ExecState.RUNNING
    assert drain(svc) == []


def test_an_expired_lease_goes_back_to_the_lane_as_the_next_attempt(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = _lease(svc, _pending(svc, job, clock), clock)
    _just_after_margin(svc, clock, NOON + timedelta(seconds=svc.settings.lease_sec))

    result = svc.watchdog.sweep(clock.now())

    stored = _get(svc, record)
    assert result.lease_expired == 1
    assert (stored.state, stored.attempt, stored.lease_token) == (ExecState.PENDING, 2, None)
    assert [(a.attempt, a.outcome) for a in stored.attempts] == [(1, "lease_expired")]
    assert [(m.execution_id, m.attempt) for m in drain(svc)] == [(record.execution_id, 2)]


def test_an_expired_lease_on_the_last_attempt_is_dead(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = _lease(svc, _pending(svc, job, clock, attempt=3), clock)
    _just_after_margin(svc, clock, NOON + timedelta(seconds=svc.settings.lease_sec))

    result = svc.watchdog.sweep(clock.now())

    stored = _get(svc, record)
    assert (result.dead, result.lease_expired) == (1, 0)
    assert (stored.state, stored.attempt) == (ExecState.DEAD, 3)
    assert svc.jobs.get(TENANT, job.job_id).last_outcome == "dead"
    assert drain(svc) == []


def test_a_lease_renewed_after_the_watchdog_read_it_is_not_reclaimed(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = _lease(svc, _pending(svc, job, clock), clock)
    _just_after_margin(svc, clock, NOON + timedelta(seconds=svc.settings.lease_sec))
    renewed_until = to_ms(clock.now() + timedelta(seconds=svc.settings.lease_sec))

    def heartbeat() -> None:
        """The worker was only late: its heartbeat lands between the watchdog's read and write."""
        svc.executions.transition(
            TENANT,
            record.execution_id,
            Transition(
                expect={
                    "state": ExecState.RUNNING,
                    "attempt": record.attempt,
                    "lease_token": record.lease_token,
                },
                set={"lease_expires_at": renewed_until, "check_at": renewed_until},
                add={"heartbeat_seq": 1},
            ),
        )

    racing = Watchdog(
        WatchdogSettings.of(svc.settings),
        svc.jobs,
        svc.due,
        interleave(svc.executions, "get", heartbeat),
        svc.lanes,
    )

    result = racing.sweep(clock.now())

    stored = _get(svc, record)
    assert result.lease_expired == 0
    assert (stored.state, stored.attempt, stored.lease_token) == (
        ExecState.RUNNING,
        1,
        record.lease_token,
    )
    assert stored.lease_expires_at == renewed_until
    assert drain(svc) == []


def test_a_retry_longer_than_sqs_delays_waits_in_the_table_and_is_released_when_due(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    receiver.fail(1, status=503)
    hourly = RetryPolicy(backoff="fixed", initial_interval="1h", jitter="none")
    job = make_job(
        now=clock.now(), next_run_time=None, run_at=NOON, target=receiver.url, retry=hourly
    )
    svc.jobs.create(job)
    record = _pending(svc, job, clock)

    svc.runner.process(Outgoing.of(record).message)
    waiting = _get(svc, record)
    assert (waiting.state, waiting.retry_at) == (ExecState.RETRY_WAIT, NOON + timedelta(hours=1))
    assert (drain(svc), delayed_count(svc)) == ([], 0)  # no message: 1 h is past SQS's 900 s

    _just_before_margin(svc, clock, NOON + timedelta(hours=1))
    assert svc.watchdog.sweep(clock.now()).retries_released == 0
    _just_after_margin(svc, clock, NOON + timedelta(hours=1))
    result = svc.watchdog.sweep(clock.now())

    assert result.retries_released == 1
    assert (_get(svc, record).state, _get(svc, record).attempt) == (ExecState.PENDING, 2)
    assert [(m.execution_id, m.attempt) for m in drain(svc)] == [(record.execution_id, 2)]
