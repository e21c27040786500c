"""The watchdog's decisions over in-memory tables (tests/support/fakes): each test leaves the
executions as a claim, a worker or a lost message would, sweeps once through the watchdog's
public entry (`Watchdog.sweep`), and checks what it wrote and sent, naming the DESIGN invariant
it defends. tests/integration/test_watchdog.py runs the same sweeps on moto's real expressions.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

import pytest

from takt.config import Settings
from takt.executions import rules
from takt.executions.lifecycle import Lifecycle
from takt.models.ids import execution_id, to_ms
from takt.models.lanes import Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord, RetryPolicy
from takt.store.ports import ExecutionRef, OutcomeNote
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from tests.support.fakes import FakeDue, FakeExecutions, FakeJobs, FakeLanes, FakeQuarantine
from tests.support.faults import Crash, crash_on
from tests.support.jobs import TENANT, make_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
LEASE_SEC = 30.0
MARGIN_SEC = 2.0
RESEND_SEC = 30.0
MS = timedelta(milliseconds=1)


class World:
    def __init__(self) -> None:
        self.settings = Settings(
            lease_sec=LEASE_SEC,
            clock_margin_sec=MARGIN_SEC,
            pending_resend_after_sec=RESEND_SEC,
            due_shards=1,
        )
        self.jobs = FakeJobs()
        self.due = FakeDue(shards=1)
        self.executions = FakeExecutions()
        self.lanes = FakeLanes()
        self.quarantine = FakeQuarantine()
        self.lifecycle = Lifecycle(self.settings, self.jobs, self.executions, self.lanes)
        self.watchdog = Watchdog(
            WatchdogSettings.of(self.settings),
            self.jobs,
            self.due,
            self.executions,
            self.lanes,
            quarantine=self.quarantine,
        )

    def job(self, max_attempts: int = 3) -> JobRecord:
        return self.jobs.put(
            make_job(now=NOON, next_run_time=NOON, retry=RetryPolicy(max_attempts=max_attempts))
        )

    def pending(self, job: JobRecord, *, indexed: bool = True) -> ExecutionRecord:
        """The execution a claim made at noon; outside the `open` index when the claim's watch
        list covers it (`indexed` False)."""
        record = ExecutionRecord.for_job(
            job, execution_id(job.job_id, NOON), NOON, ExecState.PENDING, NOON
        )
        check_at = self.lifecycle.check_at(NOON) if indexed else None
        assert self.executions.create(record, check_at_ms=check_at)
        return record

    def leased(self, job: JobRecord) -> ExecutionRecord:
        """Leased at noon by a worker that then went silent: its lease expires at noon + 30 s."""
        return self.lifecycle.lease(Outgoing.of(self.pending(job)).message, "w1", NOON)


@pytest.fixture
def world() -> World:
    return World()


def test_a_lease_expired_by_more_than_the_margin_is_taken_back_for_the_next_attempt(
    world: World,
) -> None:
    leased = world.leased(world.job())
    expiry = NOON + timedelta(seconds=LEASE_SEC)

    result = world.watchdog.sweep(expiry + timedelta(seconds=MARGIN_SEC) + MS)

    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.attempt, after.lease_token) == (ExecState.PENDING, 2, None)
    assert world.lanes.attempts() == [(leased.execution_id, 2)], (
        "invariant 5: a lease past its expiry plus the margin goes back to its lane"
    )
    assert result.lease_expired == 1


def test_a_lease_expired_but_not_past_the_margin_is_left_to_its_worker(world: World) -> None:
    leased = world.leased(world.job())
    expiry = NOON + timedelta(seconds=LEASE_SEC)

    result = world.watchdog.sweep(expiry + timedelta(seconds=MARGIN_SEC))

    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.attempt, after.lease_token) == (
        ExecState.RUNNING,
        1,
        leased.lease_token,
    ), "invariant 5: within the margin the worker may still be acting; nothing is reclaimed"
    assert world.lanes.sent == []
    assert result.lease_expired == 0
    assert world.executions.attr(after, "check_at") == to_ms(expiry), "looked at again then"


def test_the_last_attempts_expired_lease_makes_the_execution_dead_and_sends_nothing(
    world: World,
) -> None:
    leased = world.leased(world.job(max_attempts=1))

    result = world.watchdog.sweep(NOON + timedelta(seconds=LEASE_SEC + MARGIN_SEC) + MS)

    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.error) == (ExecState.DEAD, "lease expired on the last attempt")
    assert world.lanes.sent == [], "a dead execution is not run again"
    assert world.jobs.outcomes == [(leased.execution_id, "dead")]
    assert result.dead == 1


class Told:
    """A notifier that keeps what it was told: (execution, state, failure streak)."""

    def __init__(self) -> None:
        self.told: list[tuple[str, ExecState, int]] = []

    def notify_state(
        self,
        record: ExecutionRecord,
        state: ExecState,
        note: OutcomeNote,
        now: datetime,
        error: str | None = None,
    ) -> None:
        self.told.append((record.execution_id, state, note.failure_streak))


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_watchdog_dying_between_a_dead_write_and_its_note_is_followed_up_once_by_the_next_sweep(
    world: World, when: Literal["before", "after"]
) -> None:
    job = world.job(max_attempts=1)
    leased = world.leased(job)
    expired = NOON + timedelta(seconds=LEASE_SEC + MARGIN_SEC) + MS
    told = Told()

    def watchdog(jobs: FakeJobs) -> Watchdog:
        parts = (world.due, world.executions, world.lanes)
        return Watchdog(WatchdogSettings.of(world.settings), jobs, *parts, notifier=told)

    with pytest.raises(Crash):
        watchdog(crash_on(world.jobs, "record_outcome", when=when)).sweep(expired)
    later = [expired + timedelta(seconds=MARGIN_SEC + n) for n in range(3)]
    results = [watchdog(world.jobs).sweep(now) for now in later]

    after = world.executions.get(TENANT, leased.execution_id)
    streak = world.jobs.items[(TENANT, job.job_id)].get("failure_streak")
    assert (world.jobs.outcomes, streak) == ([(leased.execution_id, "dead")], {"N": "1"}), (
        "invariant 1: the dead execution's note is finished by the next sweep, and counted once"
    )
    assert told.told == [(leased.execution_id, ExecState.DEAD, 1)], (
        "invariant 1: the dead execution's notification is sent by the next sweep, once"
    )
    assert (after.follow_up, world.executions.attr(after, "check_at")) == (None, None), (
        "a followed-up end leaves the open index"
    )
    assert [r.followed_up for r in results] == [1, 0, 0], "followed up once, then left alone"


def test_a_pending_execution_whose_message_was_lost_is_sent_again_after_the_resend_wait(
    world: World,
) -> None:
    record = world.pending(world.job())
    due = NOON + timedelta(seconds=RESEND_SEC + MARGIN_SEC)

    early = world.watchdog.sweep(due - MS)
    late = world.watchdog.sweep(due)

    assert (early.resent, late.resent) == (0, 1)
    assert world.lanes.attempts() == [(record.execution_id, 1)], (
        "invariant 1: a pending execution nobody leased is sent again, at the same attempt"
    )
    again = world.executions.get(TENANT, record.execution_id)
    assert world.executions.attr(again, "check_at") == world.lifecycle.check_at(due)


def test_an_execution_a_claim_listed_and_whose_message_was_lost_is_indexed_and_sent_again(
    world: World,
) -> None:
    record = world.pending(world.job(), indexed=False)
    check_at = world.lifecycle.check_at(NOON)
    world.due.watches.add(0, check_at, [ExecutionRef(TENANT, record.execution_id)])

    result = world.watchdog.sweep(NOON + timedelta(seconds=RESEND_SEC + MARGIN_SEC) + MS)

    assert (result.watches, result.watched_open, result.resent) == (1, 1, 1)
    assert world.lanes.attempts() == [(record.execution_id, 1)], (
        "invariant 1: the watch list finds the unsent execution outside the open index"
    )
    assert world.due.watches.listed() == [], "a checked watch list is deleted"


def test_a_watch_list_passes_over_an_execution_that_ended_in_time(world: World) -> None:
    job = world.job()
    record = world.pending(job, indexed=False)
    world.due.watches.add(
        0, world.lifecycle.check_at(NOON), [ExecutionRef(TENANT, record.execution_id)]
    )
    leased = world.lifecycle.lease(Outgoing.of(record).message, "w1", NOON)
    assert world.lifecycle.complete(leased, ExecState.SUCCEEDED, NOON, rules.Report("success"))

    result = world.watchdog.sweep(NOON + timedelta(seconds=RESEND_SEC + MARGIN_SEC) + MS)

    assert (result.watches, result.watched_open, result.candidates) == (1, 0, 0)
    assert world.lanes.sent == [], "an execution that ended costs the watchdog nothing more"


def test_a_record_that_cannot_be_read_is_quarantined_and_the_sweep_goes_on(world: World) -> None:
    good = world.pending(world.job())
    poison = world.pending(world.job())
    key = (poison.job_key, poison.sk)
    world.executions.items[key]["state"] = {"S": "no such state"}

    try:
        result = world.watchdog.sweep(NOON + timedelta(seconds=RESEND_SEC + MARGIN_SEC) + MS)
    except Exception as exc:  # noqa: BLE001 - any error out of the sweep is the rule broken
        pytest.fail(f"no record stops others (invariant 9): a bad record ended the sweep: {exc!r}")

    assert world.lanes.attempts() == [(good.execution_id, 1)], (
        "invariant 9: the unreadable execution does not stop the others"
    )
    assert result.quarantined == 1
    parked = world.quarantine.parked
    assert [(p.table, p.key, p.where) for p in parked] == [
        ("executions", {"job_key": poison.job_key, "sk": poison.sk}, "watchdog")
    ]
    assert "open_shard" not in world.executions.items[key], "no later sweep meets it again"
