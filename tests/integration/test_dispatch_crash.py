"""Crash safety of dispatch (DESIGN invariants 1-3): a claimer that dies between any two of its
steps, or whose write succeeds but whose answer is lost, leaves nothing that the next tick does
not finish, and nothing it does twice.

Each case crashes a claim of one partition holding three jobs due at the same instant (a cron job,
an interval job and a one-off), checks exactly which steps the dead claim had finished (which
pins the step order documented in `takt.dispatch.claimer`; with one write thread the order is
exact, with several each phase's writes run at once and only the phases' order holds), lets
healthy ticks run, and then has the history checker judge the result: every due occurrence has
exactly one execution, every job sits at its next occurrence with exactly one live due item, every
pending execution has a message, and a worker fed every message (duplicates included) calls each
target exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeVar

import pytest

from takt.aws import AwsClients, make_clients
from takt.clock import ManualClock
from takt.config import Settings
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.models.records import ExecState, JobRecord, JobStatus
from takt.store.due import minute_of
from takt.store.executions import Transition
from takt.wiring import Services
from tests.support.faults import Crash, LostResponses, crash_on
from tests.support.history import Expect, HistoryChecker
from tests.support.jobs import TENANT, job_id_in_shard, make_job, store_job
from tests.support.lanes import drain, visible_count
from tests.support.receiver import Receiver

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
D = NOON + timedelta(minutes=1)  # when all three jobs are due
WRITTEN = NOON + timedelta(seconds=30)  # when their due items were written
CLAIM_AT = D + timedelta(milliseconds=250)
SHARD = 0

T = TypeVar("T")


@dataclass(frozen=True)
class Batch:
    cron: JobRecord  # every minute: next at 12:02
    interval: JobRecord  # every 45 s from 12:00:15: next at 12:01:45
    one_off: JobRecord  # runs once, then completes

    @property
    def jobs(self) -> list[JobRecord]:
        return [self.cron, self.interval, self.one_off]

    @property
    def next_runs(self) -> dict[str, datetime | None]:
        return {
            self.cron.job_id: D + timedelta(minutes=1),
            self.interval.job_id: D + timedelta(seconds=45),
            self.one_off.job_id: None,
        }

    def expectations(self) -> list[Expect]:
        return [Expect(job_id, [D], nxt) for job_id, nxt in self.next_runs.items()]


@dataclass(frozen=True)
class Progress:
    """How far a crashed claim got, step by step (claimer.py's order: create, send, index the
    next occurrence, advance, delete the fired item)."""

    created: int
    sent: int
    next_indexed: int
    advanced: int
    fired_deleted: int


def _batch(svc: Services, clock: ManualClock, target: str) -> Batch:
    clock.set(WRITTEN)

    def job(**fields: object) -> JobRecord:
        record = make_job(
            now=WRITTEN,
            next_run_time=D,
            job_id=job_id_in_shard(TENANT, SHARD, svc.due.shards),
            target=target,
            **fields,  # type: ignore[arg-type]
        )
        return store_job(svc, record, WRITTEN)

    return Batch(
        cron=job(schedule="* * * * *"),
        interval=job(interval="45s", anchor=NOON + timedelta(seconds=15)),
        one_off=job(),
    )


def _progress(svc: Services, checker: HistoryChecker, batch: Batch) -> Progress:
    due = {(d.job_id, d.due) for d in checker.due_items()}
    created = sum(len(checker.executions(TENANT, j.job_id)) for j in batch.jobs)
    stored = [svc.jobs.get(TENANT, j.job_id) for j in batch.jobs]
    return Progress(
        created=created,
        sent=visible_count(svc, "default"),
        next_indexed=sum((j, n) in due for j, n in batch.next_runs.items() if n is not None),
        advanced=sum(j.next_run_time != D or j.status != JobStatus.ACTIVE for j in stored),
        fired_deleted=sum((j.job_id, D) not in due for j in batch.jobs),
    )


def _recover(svc: Services, clock: ManualClock) -> None:
    """The healthy ticks after the crash: one a second later, one after the due grace period."""
    clock.set(CLAIM_AT + timedelta(seconds=1))
    svc.ticker.tick(clock.now())
    clock.set(WRITTEN + timedelta(seconds=svc.settings.due_grace_sec + 5))
    svc.ticker.tick(clock.now())


def _assert_sound(svc: Services, checker: HistoryChecker, batch: Batch, receiver: Receiver) -> None:
    report = checker.check(batch.expectations())
    assert report.problems() == []
    assert report.stale_due == []  # the stale items a crash left were cleaned up
    # Every message, duplicates included, goes to a worker: each target is called exactly once.
    for message in report.messages:
        svc.runner.process(message)
    assert len(receiver.calls) == 3
    assert {
        svc.executions.get(TENANT, r.execution_id).state
        for records in report.executions.values()
        for r in records
    } == {ExecState.SUCCEEDED}


def _crashing_claimer(
    svc: Services,
    part: str,
    method: str,
    call: int,
    when: Literal["before", "after"],
    threads: int = 1,
) -> Claimer:
    """A claimer on `svc`'s stores and lanes, one of which dies at the chosen call, writing
    each phase `threads` at a time."""

    def maybe(name: str, target: T) -> T:
        return crash_on(target, method, call=call, when=when) if name == part else target

    return Claimer(
        ClaimerSettings.of(svc.settings.model_copy(update={"claimer_threads": threads})),
        maybe("jobs", svc.jobs),
        maybe("due", svc.due),
        maybe("executions", svc.executions),
        maybe("lanes", svc.lanes),
    )


CRASH_POINTS = [
    pytest.param("executions", "create", 1, "after", Progress(1, 0, 0, 0, 0), id="create-1"),
    pytest.param("executions", "create", 3, "after", Progress(3, 0, 0, 0, 0), id="create-3"),
    pytest.param("lanes", "send", 1, "after", Progress(3, 3, 0, 0, 0), id="send"),
    # The next occurrences are indexed in one request (`put_many`): before it, or after it.
    pytest.param("due", "put_many", 1, "before", Progress(3, 3, 0, 0, 0), id="next-due-puts"),
    pytest.param("due", "put_many", 1, "after", Progress(3, 3, 2, 0, 0), id="next-due-put-2"),
    pytest.param("jobs", "advance", 1, "after", Progress(3, 3, 2, 1, 0), id="advance-1"),
    pytest.param("jobs", "advance", 3, "after", Progress(3, 3, 2, 3, 0), id="advance-3"),
    pytest.param(
        "due", "delete_if_unchanged", 1, "before", Progress(3, 3, 2, 3, 0), id="before-delete-1"
    ),
    pytest.param(
        "due", "delete_if_unchanged", 3, "before", Progress(3, 3, 2, 3, 2), id="before-delete-3"
    ),
]


# The phase each Progress field belongs to, and each crashing method's phase (the fired due
# items are deleted, or passed by the claim cursor, once every advance is done).
FIELD_PHASES = {"created": 0, "sent": 1, "next_indexed": 2, "advanced": 3, "fired_deleted": 4}
METHOD_PHASES = {"create": 0, "send": 1, "put_many": 2, "advance": 3, "delete_if_unchanged": 4}
COMPLETE = Progress(created=3, sent=3, next_indexed=2, advanced=3, fired_deleted=3)


@pytest.mark.parametrize(("part", "method", "call", "when", "progress"), CRASH_POINTS)
def test_a_claim_that_crashes_between_steps_is_finished_by_the_next_ticks(
    svc: Services,
    clock: ManualClock,
    checker: HistoryChecker,
    receiver: Receiver,
    part: str,
    method: str,
    call: int,
    when: Literal["before", "after"],
    progress: Progress,
) -> None:
    batch = _batch(svc, clock, receiver.url)
    crashing = _crashing_claimer(svc, part, method, call, when)
    clock.set(CLAIM_AT)

    with pytest.raises(Crash):
        crashing.claim(minute_of(D), SHARD, clock.now())

    assert _progress(svc, checker, batch) == progress
    _recover(svc, clock)
    _assert_sound(svc, checker, batch, receiver)


@pytest.mark.parametrize(("part", "method", "call", "when", "progress"), CRASH_POINTS)
def test_a_parallel_claim_that_crashes_leaves_no_later_phase_started(
    svc: Services,
    clock: ManualClock,
    checker: HistoryChecker,
    receiver: Receiver,
    part: str,
    method: str,
    call: int,
    when: Literal["before", "after"],
    progress: Progress,
) -> None:
    batch = _batch(svc, clock, receiver.url)
    crashing = _crashing_claimer(svc, part, method, call, when, threads=8)
    clock.set(CLAIM_AT)

    with pytest.raises(Crash):
        crashing.claim(minute_of(D), SHARD, clock.now())

    crashed = METHOD_PHASES[method]
    got = _progress(svc, checker, batch)
    for name, phase in FIELD_PHASES.items():
        done = getattr(got, name)
        if phase < crashed:
            assert done == getattr(COMPLETE, name), name
        elif phase == crashed:
            # At least what the sequential claim did by then: the other writes of the phase
            # ran beside the one that crashed.
            assert getattr(progress, name) <= done <= getattr(COMPLETE, name), name
        else:
            assert done == 0, name
    _recover(svc, clock)
    _assert_sound(svc, checker, batch, receiver)


@pytest.fixture(scope="module")
def fault_clients(moto_endpoint: str) -> AwsClients:
    """Clients of their own for the faulty claimer, so its hooks never touch `svc`'s."""
    return make_clients(Settings(aws_endpoint_url=moto_endpoint))


LOST = [
    pytest.param("PutItem", "executions_table", id="execution-create"),
    pytest.param("UpdateItem", "jobs_table", id="job-advance"),
]


@pytest.mark.parametrize(("operation", "table"), LOST)
def test_a_lost_response_that_the_sdk_retries_is_harmless(
    svc: Services,
    clock: ManualClock,
    checker: HistoryChecker,
    receiver: Receiver,
    fault_clients: AwsClients,
    operation: str,
    table: str,
) -> None:
    batch = _batch(svc, clock, receiver.url)
    faulty = Services(settings=svc.settings, clients=fault_clients, clock=clock)
    clock.set(CLAIM_AT)

    with LostResponses(
        fault_clients.dynamodb, operation, getattr(svc.settings, table), mode="retryable"
    ) as lost:
        result = faulty.claimer.claim(minute_of(D), SHARD, clock.now())

    assert lost.lost == 1
    assert result.dispatched == 3
    _recover(svc, clock)
    _assert_sound(svc, checker, batch, receiver)


@pytest.mark.parametrize(("operation", "table"), LOST)
def test_a_lost_response_that_aborts_the_claim_is_finished_by_the_next_ticks(
    svc: Services,
    clock: ManualClock,
    checker: HistoryChecker,
    receiver: Receiver,
    fault_clients: AwsClients,
    operation: str,
    table: str,
) -> None:
    batch = _batch(svc, clock, receiver.url)
    faulty = Services(settings=svc.settings, clients=fault_clients, clock=clock)
    clock.set(CLAIM_AT)

    with (
        LostResponses(
            fault_clients.dynamodb, operation, getattr(svc.settings, table), mode="fatal"
        ) as lost,
        pytest.raises(ConnectionError),
    ):
        faulty.claimer.claim(minute_of(D), SHARD, clock.now())

    assert lost.lost == 1
    _recover(svc, clock)
    _assert_sound(svc, checker, batch, receiver)


def test_a_claim_retried_after_its_run_started_still_holds_the_overlap_slot(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(WRITTEN)
    job = store_job(
        svc,
        make_job(
            now=WRITTEN,
            next_run_time=D,
            schedule="* * * * *",
            overlap="skip",
            job_id=job_id_in_shard(TENANT, SHARD, svc.due.shards),
        ),
        WRITTEN,
    )
    clock.set(CLAIM_AT)
    with pytest.raises(Crash):
        _crashing_claimer(svc, "lanes", "send", 1, "after").claim(minute_of(D), SHARD, CLAIM_AT)
    [message] = drain(svc)
    # A worker takes the lease before the claim is retried (it runs long).
    svc.executions.transition(
        TENANT,
        message.execution_id,
        Transition(
            expect={"state": ExecState.PENDING, "attempt": 1},
            set={"state": ExecState.RUNNING, "lease_token": "tok", "lease_expires_at": 2**40},
        ),
    )

    svc.claimer.claim(minute_of(D), SHARD, CLAIM_AT + timedelta(seconds=1))
    later = D + timedelta(minutes=1)
    result = svc.claimer.claim(minute_of(later), SHARD, later)

    assert svc.jobs.get(TENANT, job.job_id).active_execution == message.execution_id
    assert (result.dispatched, result.skipped) == (0, 1)
