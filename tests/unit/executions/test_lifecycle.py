"""The lifecycle's operations decide against in-memory tables (tests/support/fakes): each
test names an operation, the state it starts from, and what it must and must not write or send.
The moto integration tests (tests/integration) run the same operations on the real expressions.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from takt.config import Settings
from takt.executions import rules
from takt.executions.lifecycle import Lifecycle
from takt.models.ids import execution_id, new_job_id, to_ms
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord, OverlapPolicy
from takt.store.errors import ConflictError
from tests.support.fakes import FakeExecutions, FakeJobs, FakeLanes

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
RESEND = 30.0
TENANT = "t1"


class World:
    def __init__(self, lease_sec: float = 60.0) -> None:
        self.settings = Settings(lease_sec=lease_sec, pending_resend_after_sec=RESEND)
        self.jobs = FakeJobs()
        self.executions = FakeExecutions()
        self.lanes = FakeLanes()
        self.lifecycle = Lifecycle(self.settings, self.jobs, self.executions, self.lanes)

    def job(self, overlap: OverlapPolicy = "allow", max_attempts: int = 3) -> JobRecord:
        return self.jobs.put(
            JobRecord.model_validate(
                {
                    "tenant_id": TENANT,
                    "job_id": new_job_id(),
                    "run_at": NOON,
                    "anchor": NOON,
                    "target": "https://example.com/hook",
                    "overlap": overlap,
                    "retry": {"max_attempts": max_attempts},
                    "next_run_time": NOON,
                    "created_at": NOON,
                    "updated_at": NOON,
                }
            )
        )

    def execution(
        self,
        job: JobRecord,
        *,
        at: datetime = NOON,
        state: ExecState = ExecState.PENDING,
    ) -> ExecutionRecord:
        record = ExecutionRecord.for_job(job, execution_id(job.job_id, at), at, state, NOON)
        assert self.executions.create(record, check_at_ms=self.lifecycle.check_at(NOON))
        return record

    def leased(self, job: JobRecord, now: datetime = NOON) -> ExecutionRecord:
        return self.lifecycle.lease(self.message(self.execution(job)), "w1", now)

    @staticmethod
    def message(record: ExecutionRecord) -> LaneMessage:
        return Outgoing.of(record).message

    def attempts_sent(self) -> list[tuple[str, int, int]]:
        return [(o.message.execution_id, o.message.attempt, o.delay_sec) for o in self.lanes.sent]


@pytest.fixture
def world() -> World:
    return World()


# Lease and heartbeat


def test_a_lease_takes_a_pending_execution_and_leaves_check_at_when_it_outlasts_the_resend_wait(
    world: World,
) -> None:
    record = world.execution(world.job())

    leased = world.lifecycle.lease(world.message(record), "w1", NOON + timedelta(seconds=2))

    assert (leased.state, leased.worker_id, leased.lag_ms) == (ExecState.RUNNING, "w1", 2000)
    assert leased.lease_expires_at == to_ms(NOON + timedelta(seconds=62))
    assert world.executions.attr(leased, "check_at") == to_ms(NOON + timedelta(seconds=RESEND))


def test_a_lease_shorter_than_the_resend_wait_moves_check_at_to_its_expiry() -> None:
    world = World(lease_sec=10)
    leased = world.leased(world.job())

    assert world.executions.attr(leased, "check_at") == to_ms(NOON + timedelta(seconds=10))


def test_a_stale_message_leases_nothing(world: World) -> None:
    record = world.execution(world.job())
    stale = world.message(record).model_copy(update={"attempt": 2})

    with pytest.raises(ConflictError):
        world.lifecycle.lease(stale, "w1", NOON)
    assert world.executions.get(TENANT, record.execution_id).state == ExecState.PENDING


def test_a_heartbeat_extends_the_lease_and_counts_and_a_stale_one_is_fenced(world: World) -> None:
    leased = world.leased(world.job())

    beat = world.lifecycle.heartbeat(leased, NOON + timedelta(seconds=20))

    assert beat.lease_expires_at == to_ms(NOON + timedelta(seconds=80))
    assert beat.heartbeat_seq == 1
    with pytest.raises(ConflictError):
        world.lifecycle.heartbeat(leased.model_copy(update={"lease_token": "old"}), NOON)


# Completion, retry, give-back


def test_a_completion_ends_the_execution_and_frees_the_jobs_slot(world: World) -> None:
    job = world.job(overlap="skip")
    leased = world.leased(job)
    world.jobs.take_slot(TENANT, job.job_id, leased.execution_id, expected=None)

    done = world.lifecycle.complete(
        leased, ExecState.SUCCEEDED, NOON, rules.Report("succeeded", status_code=200)
    )

    assert done
    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.status_code) == (ExecState.SUCCEEDED, 200)
    assert [a.outcome for a in after.attempts] == ["succeeded"]
    assert world.executions.attr(after, "check_at") is None
    assert world.executions.attr(after, "open_shard") is None
    assert world.jobs.outcomes == [(leased.execution_id, "succeeded")]
    assert world.jobs.get(TENANT, job.job_id).active_execution is None


def test_a_completion_by_a_lost_lease_applies_nothing(world: World) -> None:
    leased = world.leased(world.job())
    stale = leased.model_copy(update={"lease_token": "someone-else"})

    assert not world.lifecycle.complete(stale, ExecState.SUCCEEDED, NOON, rules.Report("x"))
    assert world.executions.get(TENANT, leased.execution_id).state == ExecState.RUNNING
    assert world.jobs.outcomes == []


def test_a_completion_retried_after_its_answer_was_lost_still_does_what_follows_once(
    world: World,
) -> None:
    job = world.job()
    leased = world.leased(job)
    report = rules.Report("failed", "bad request")
    world.lifecycle.complete(leased, ExecState.FAILED, NOON, report)

    assert world.lifecycle.complete(leased, ExecState.FAILED, NOON, report)
    noted = world.jobs.items[(TENANT, job.job_id)]
    assert (world.jobs.outcomes, noted["failure_streak"]) == (
        [(leased.execution_id, "failed")],
        {"N": "1"},
    ), "the same end noted again is the same note: the failure streak counts it once"


def test_a_retry_moves_to_the_next_attempt_and_sends_it_delayed(world: World) -> None:
    leased = world.leased(world.job())

    written = world.lifecycle.retry(
        leased, NOON, timedelta(seconds=10), rules.Report("retry", "503")
    )

    assert written == ExecState.RETRY_WAIT
    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.attempt, after.lease_token) == (ExecState.RETRY_WAIT, 2, None)
    assert world.executions.attr(after, "check_at") == to_ms(NOON + timedelta(seconds=40))
    assert world.attempts_sent()[-1] == (leased.execution_id, 2, 10)


def test_a_retry_longer_than_sqs_allows_sends_nothing_and_waits_for_the_watchdog(
    world: World,
) -> None:
    leased = world.leased(world.job())
    sent = len(world.lanes.sent)

    world.lifecycle.retry(leased, NOON, timedelta(hours=1), rules.Report("retry", "503"))

    after = world.executions.get(TENANT, leased.execution_id)
    assert world.executions.attr(after, "check_at") == to_ms(NOON + timedelta(hours=1))
    assert len(world.lanes.sent) == sent


def test_a_cancel_asked_for_during_the_call_wins_over_its_retry(world: World) -> None:
    leased = world.leased(world.job())
    world.lifecycle.stop(leased, NOON, reason="cancel requested")

    written = world.lifecycle.retry(leased, NOON, timedelta(seconds=1), rules.Report("retry", "x"))

    assert written == ExecState.CANCELLED
    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.attempt) == (ExecState.CANCELLED, 1)
    assert world.attempts_sent() == []


def test_a_give_back_returns_the_execution_at_the_same_attempt(world: World) -> None:
    leased = world.leased(world.job())

    written = world.lifecycle.give_back(leased, NOON, rules.Report("given_back"), delay_sec=5)

    assert written == ExecState.PENDING
    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.attempt, after.lease_token) == (ExecState.PENDING, 1, None)
    assert world.executions.attr(after, "check_at") == to_ms(NOON + timedelta(seconds=35))
    assert world.attempts_sent() == [(leased.execution_id, 1, 5)]


def test_a_requeued_message_moves_check_at_past_its_copy_and_a_stale_one_sends_nothing(
    world: World,
) -> None:
    record = world.execution(world.job())

    world.lifecycle.requeue(world.message(record), 5, NOON)

    assert world.executions.attr(record, "check_at") == to_ms(NOON + timedelta(seconds=35))
    assert world.attempts_sent() == [(record.execution_id, 1, 5)]
    stale = world.message(record).model_copy(update={"attempt": 3})
    with pytest.raises(ConflictError):
        world.lifecycle.requeue(stale, 5, NOON)
    assert len(world.lanes.sent) == 1


# The watchdog


def test_an_expired_lease_sends_the_next_attempt(world: World) -> None:
    leased = world.leased(world.job())

    assert world.lifecycle.expire(leased, NOON) == ExecState.PENDING

    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.attempt, after.lease_token) == (ExecState.PENDING, 2, None)
    assert [a.outcome for a in after.attempts] == ["lease_expired"]
    assert world.attempts_sent() == [(leased.execution_id, 2, 0)]


def test_an_expired_lease_on_the_last_attempt_is_dead_and_noted_on_the_job(world: World) -> None:
    leased = world.leased(world.job(max_attempts=1))

    assert world.lifecycle.expire(leased, NOON) == ExecState.DEAD

    after = world.executions.get(TENANT, leased.execution_id)
    assert (after.state, after.error) == (ExecState.DEAD, "lease expired on the last attempt")
    assert world.jobs.outcomes == [(leased.execution_id, "dead")]
    assert world.attempts_sent() == []


def test_an_expired_lease_whose_cancel_was_asked_for_is_cancelled_never_retried(
    world: World,
) -> None:
    leased = world.leased(world.job())
    asked = world.lifecycle.stop(leased, NOON, reason="cancel requested")

    assert world.lifecycle.expire(asked, NOON) == ExecState.CANCELLED
    assert world.executions.get(TENANT, leased.execution_id).state == ExecState.CANCELLED
    assert world.attempts_sent() == []


def test_a_heartbeat_that_lands_before_the_expiry_write_keeps_the_lease(world: World) -> None:
    leased = world.leased(world.job())
    world.lifecycle.heartbeat(leased, NOON)

    with pytest.raises(ConflictError):
        world.lifecycle.expire(leased, NOON)
    assert world.executions.get(TENANT, leased.execution_id).state == ExecState.RUNNING
    assert world.attempts_sent() == []


def test_a_live_lease_is_looked_at_again_at_its_expiry(world: World) -> None:
    leased = world.leased(world.job())

    world.lifecycle.recheck_at_expiry(leased)

    assert world.executions.attr(leased, "check_at") == leased.lease_expires_at


def test_the_watchdog_resends_a_pending_execution_and_releases_a_due_retry(world: World) -> None:
    job = world.job()
    pending = world.execution(job)
    later = NOON + timedelta(minutes=1)

    world.lifecycle.resend(pending, later)
    waiting = world.execution(job, at=NOON + timedelta(hours=1), state=ExecState.RETRY_WAIT)
    world.lifecycle.release_retry(waiting, later)

    assert world.executions.attr(pending, "check_at") == to_ms(later + timedelta(seconds=RESEND))
    assert world.executions.get(TENANT, waiting.execution_id).state == ExecState.PENDING
    assert world.attempts_sent() == [(pending.execution_id, 1, 0), (waiting.execution_id, 1, 0)]


# Overlap: queued executions


def test_the_end_of_a_queue_jobs_run_promotes_its_oldest_queued_execution(world: World) -> None:
    job = world.job(overlap="queue")
    leased = world.leased(job)
    world.jobs.take_slot(TENANT, job.job_id, leased.execution_id, expected=None)
    first = world.execution(job, at=NOON + timedelta(minutes=1), state=ExecState.QUEUED)
    second = world.execution(job, at=NOON + timedelta(minutes=2), state=ExecState.QUEUED)

    world.lifecycle.complete(leased, ExecState.SUCCEEDED, NOON, rules.Report("succeeded"))

    assert world.executions.get(TENANT, first.execution_id).state == ExecState.PENDING
    assert world.executions.get(TENANT, second.execution_id).state == ExecState.QUEUED
    assert world.jobs.get(TENANT, job.job_id).active_execution == first.execution_id
    assert world.attempts_sent() == [(first.execution_id, 1, 0)]


def test_a_queued_execution_waits_while_its_slot_is_held(world: World) -> None:
    job = world.job(overlap="queue")
    leased = world.leased(job)
    world.jobs.take_slot(TENANT, job.job_id, leased.execution_id, expected=None)
    queued = world.execution(job, at=NOON + timedelta(minutes=1), state=ExecState.QUEUED)

    assert world.lifecycle.promote(TENANT, job.job_id, NOON) is None
    world.lifecycle.postpone(queued, NOON + timedelta(minutes=5))

    assert world.executions.get(TENANT, queued.execution_id).state == ExecState.QUEUED
    assert world.executions.attr(queued, "check_at") == to_ms(
        NOON + timedelta(minutes=5, seconds=RESEND)
    )


# Cancel and re-run


def test_a_waiting_execution_is_cancelled_at_once_and_a_running_one_is_asked(world: World) -> None:
    job = world.job()
    waiting = world.execution(job, at=NOON + timedelta(minutes=1))
    leased = world.leased(job)

    world.lifecycle.cancel(waiting, NOON, reason="cancelled before it ran")
    asked = world.lifecycle.cancel(leased, NOON, reason="cancel requested")

    assert world.executions.get(TENANT, waiting.execution_id).state == ExecState.CANCELLED
    assert world.executions.attr(waiting, "check_at") is None
    assert (asked.state, asked.cancel_requested) == (ExecState.RUNNING, True)
    assert world.jobs.outcomes == [(waiting.execution_id, "cancelled")]


def test_a_rerun_gives_a_dead_execution_a_fresh_budget_and_sends_it(world: World) -> None:
    leased = world.leased(world.job(max_attempts=1))
    world.lifecycle.expire(leased, NOON)
    dead = world.executions.get(TENANT, leased.execution_id)

    again = world.lifecycle.rerun(dead, NOON, budget=3, definition={}, reason="re-run requested")

    assert (again.state, again.attempt, again.max_attempts) == (ExecState.PENDING, 2, 4)
    assert again.finished_at is None
    assert world.executions.attr(again, "check_at") == to_ms(NOON + timedelta(seconds=RESEND))
    assert world.attempts_sent() == [(dead.execution_id, 2, 0)]
    with pytest.raises(ConflictError):
        world.lifecycle.rerun(dead, NOON, budget=3, definition={}, reason="twice")
