"""The worker's decisions over in-memory tables (tests/support/fakes): each test hands one lane
message to the runner's public entry (`ExecutionRunner.process`) with a target that answers as
the test needs, and checks what was written and sent, naming the DESIGN invariant it defends.
The worker's own clock is a `ManualClock`'s monotonic time; tests/integration/test_worker_runner.py
runs the same decisions on moto's real expressions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from botocore.exceptions import ClientError

from takt.clock import ManualClock
from takt.config import Settings
from takt.executions.lifecycle import Lifecycle
from takt.models.calls import CallContext, TargetResult
from takt.models.ids import execution_id, to_ms
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord, RetryPolicy
from takt.store.ports import Transition
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.support.fakes import FakeExecutions, FakeJobs, FakeLanes
from tests.support.jobs import TENANT, make_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
LEASE_SEC = 30.0
MARGIN_SEC = 2.0
# How long a test waits, at most, for a call the runner was meant to stop.
STOP_WAIT_SEC = 5.0

Answer = Callable[[CallContext], TargetResult]


class Targets:
    """A target that answers each call with `answer`, and records the calls."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.calls: list[CallContext] = []

    def serves(self, handler: str) -> bool:
        return True

    def call(self, target: str, ctx: CallContext) -> TargetResult:
        self.calls.append(ctx)
        return self.answer(ctx)


class World:
    def __init__(self, answer: Answer, *, heartbeat_sec: float = 10.0) -> None:
        self.settings = Settings(
            lease_sec=LEASE_SEC, clock_margin_sec=MARGIN_SEC, heartbeat_sec=heartbeat_sec
        )
        self.clock = ManualClock(NOON)
        self.jobs = FakeJobs()
        self.executions = FakeExecutions()
        self.lanes = FakeLanes()
        self.targets = Targets(answer)
        # The runner's waits: each moves the clock on, as the wait would have.
        self.slept: list[float] = []
        self.runner = ExecutionRunner(
            RunnerSettings.of(self.settings),
            self.jobs,
            self.executions,
            self.lanes,
            self.targets,
            self.clock,
            worker_id="w1",
            sleep=self.sleep,
            monotonic=self.clock.monotonic,
        )
        # Another actor on the same tables: the watchdog's writes.
        self.lifecycle = Lifecycle(self.settings, self.jobs, self.executions, self.lanes)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.clock.advance(seconds)

    def message(self, retry: RetryPolicy | None = None, at: datetime = NOON) -> LaneMessage:
        """A pending execution of a job due `at`, claimed at noon, and its lane message."""
        job: JobRecord = self.jobs.put(make_job(now=NOON, next_run_time=at, retry=retry))
        record = ExecutionRecord.for_job(
            job, execution_id(job.job_id, at), at, ExecState.PENDING, NOON
        )
        assert self.executions.create(record, check_at_ms=self.lifecycle.check_at(NOON))
        return Outgoing.of(record).message

    def execution(self, message: LaneMessage) -> ExecutionRecord:
        return self.executions.get(TENANT, message.execution_id)


def failing(ctx: CallContext) -> TargetResult:
    return TargetResult("retryable", error="HTTP 503", status_code=503)


FIXED_10S = RetryPolicy(max_attempts=3, backoff="fixed", initial_interval="10s", jitter="none")


def test_a_failed_attempt_waits_its_backoff_and_its_next_attempt_is_sent_delayed() -> None:
    world = World(failing)
    message = world.message(FIXED_10S)

    outcome = world.runner.process(message)

    after = world.execution(message)
    assert (outcome.state, after.state, after.attempt) == ("retry_wait", ExecState.RETRY_WAIT, 2)
    assert after.retry_at == NOON + timedelta(seconds=10)
    assert [(o.message.attempt, o.delay_sec) for o in world.lanes.sent] == [(2, 10)], (
        "a retry within SQS's longest delay is sent at once, delayed by its backoff"
    )
    assert world.jobs.outcomes == [], "a retried attempt is not the job's outcome"


def test_a_retry_longer_than_sqs_can_delay_waits_in_the_table_for_the_watchdog() -> None:
    world = World(failing)
    slow = RetryPolicy(max_attempts=3, backoff="fixed", initial_interval="20m", jitter="none")
    message = world.message(slow)

    world.runner.process(message)

    after = world.execution(message)
    assert (after.state, after.retry_at) == (ExecState.RETRY_WAIT, NOON + timedelta(minutes=20))
    assert world.lanes.sent == [], "no message can wait 20 minutes in SQS"
    assert world.executions.attr(after, "check_at") == to_ms(NOON + timedelta(minutes=20)), (
        "the watchdog releases it when its retry is due"
    )


def test_the_last_attempt_failing_makes_the_execution_dead_and_sends_nothing() -> None:
    world = World(failing)
    message = world.message(RetryPolicy(max_attempts=1))

    outcome = world.runner.process(message)

    after = world.execution(message)
    assert (outcome.state, after.state, after.error) == ("dead", ExecState.DEAD, "HTTP 503")
    assert world.lanes.sent == [], "a dead execution is not run again"
    assert world.jobs.outcomes == [(message.execution_id, "dead")]
    assert world.executions.attr(after, "open_shard") is None, "nothing is left to watch"


def test_a_report_after_the_lease_was_taken_over_is_fenced_and_never_applied() -> None:
    world: World

    def taken_over_meanwhile(ctx: CallContext) -> TargetResult:
        # The watchdog found this worker's lease expired and gave the execution its next attempt.
        current = world.executions.get(TENANT, ctx.execution_id)
        world.lifecycle.expire(current, NOON + timedelta(seconds=LEASE_SEC + MARGIN_SEC + 1))
        return TargetResult("success")

    world = World(taken_over_meanwhile)
    message = world.message()

    outcome = world.runner.process(message)

    after = world.execution(message)
    assert outcome.state == "fenced"
    assert (after.state, after.attempt) == (ExecState.PENDING, 2), (
        "invariant 4: the stale worker's success is rejected by the fence, not applied"
    )
    assert world.executions.attr(after, "fenced_reports") == 1, "the rejected report is recorded"
    assert world.jobs.outcomes == []


def test_a_duplicate_message_of_a_running_attempt_calls_nothing() -> None:
    world = World(lambda ctx: TargetResult("success"))
    message = world.message()
    world.lifecycle.lease(message, "w0", NOON)

    outcome = world.runner.process(message)

    assert (outcome.state, outcome.detail) == ("running", "duplicate or stale message")
    assert world.targets.calls == [], "invariant 3: the lease condition absorbs the duplicate"


def test_a_worker_whose_lease_write_outlasted_the_lease_calls_nothing_and_reports_nothing() -> None:
    world = World(lambda ctx: TargetResult("success"))
    message = world.message()

    def slow_write(execution: str, change: Transition) -> None:
        world.executions.before_transition = None
        world.clock.advance(LEASE_SEC)

    world.executions.before_transition = slow_write

    outcome = world.runner.process(message)

    after = world.execution(message)
    assert outcome.state == "lease_lost"
    assert world.targets.calls == [], "invariant 10: no call once the lease may be someone else's"
    assert (after.state, after.attempt, after.finished_at) == (ExecState.RUNNING, 1, None)
    assert world.executions.attr(after, "fenced_reports") == 0
    assert world.lanes.sent == []


def test_a_worker_whose_heartbeats_fail_stops_at_its_leases_local_expiry_and_reports_nothing() -> (
    None
):
    def until_stopped(ctx: CallContext) -> TargetResult:
        ctx.stop.wait(STOP_WAIT_SEC)
        return TargetResult("success")

    world = World(until_stopped, heartbeat_sec=0.02)
    message = world.message()
    leased_already: list[bool] = []

    def unreachable_table(execution: str, change: Transition) -> None:
        if not leased_already:
            leased_already.append(True)  # the lease itself is written
            return
        if "heartbeat_seq" not in change.add:
            # A report after the lease was lost on the worker's clock is applied, so that the
            # assertions below judge it (an error raised here would fail the test for no rule).
            return
        # Every heartbeat fails (throttled past the SDK's retries) while the worker's clock runs.
        world.clock.advance(LEASE_SEC)
        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}},
            "UpdateItem",
        )

    world.executions.before_transition = unreachable_table

    outcome = world.runner.process(message)

    after = world.execution(message)
    assert outcome.state == "lease_lost"
    assert world.targets.calls[0].stop.reason == "lease_lost", "the call is told to stop"
    assert world.targets.calls[0].stop.wait(0), "and a cooperative handler sees it at once"
    assert (after.state, after.attempt, after.finished_at) == (ExecState.RUNNING, 1, None), (
        "invariant 10: a worker that lost its lease on its own clock writes nothing"
    )
    assert world.executions.attr(after, "fenced_reports") == 0
    assert world.lanes.sent == []
    assert world.jobs.outcomes == []


def test_a_success_ends_the_execution_and_notes_it_on_the_job() -> None:
    world = World(lambda ctx: TargetResult("success", status_code=200))
    message = world.message()

    outcome = world.runner.process(message)

    after = world.execution(message)
    assert (outcome.state, after.state, after.status_code) == (
        "succeeded",
        ExecState.SUCCEEDED,
        200,
    )
    assert after.finished_at == NOON
    assert world.jobs.outcomes == [(message.execution_id, "succeeded")]


def test_a_message_claimed_ahead_is_held_until_its_time_before_the_lease() -> None:
    world = World(lambda ctx: TargetResult("success"))
    message = world.message(at=NOON + timedelta(seconds=1))

    world.runner.process(message)

    assert world.slept == [1.0]
    assert world.execution(message).started_at == NOON + timedelta(seconds=1), (
        "invariant 5: an occurrence claimed ahead starts at its time on the worker's clock"
    )


def test_a_worker_whose_heartbeats_succeed_runs_on_past_its_first_lease() -> None:
    # Four beats of 10 s each: the call outlives the first lease's 28 s on the worker's clock,
    # and each beat lands well inside the lease the one before it renewed.
    beats = 4

    def after_the_beats(ctx: CallContext) -> TargetResult:
        deadline = time.monotonic() + STOP_WAIT_SEC
        record = world.executions.get(TENANT, ctx.execution_id)
        while world.executions.attr(record, "heartbeat_seq") < beats:
            if ctx.stop.wait(0.01) or time.monotonic() > deadline:
                break
        return TargetResult("success")

    world = World(after_the_beats, heartbeat_sec=0.02)
    message = world.message()

    def each_beat_takes_10_s(execution: str, change: Transition) -> None:
        if "heartbeat_seq" in change.add:
            world.clock.advance(10)

    world.executions.before_transition = each_beat_takes_10_s

    outcome = world.runner.process(message)

    assert world.clock.monotonic() >= beats * 10, "the call outlived its first lease (28 s)"
    assert outcome.state == "succeeded", (
        "invariant 10 stops only a worker that lost its lease: each heartbeat that succeeds "
        "renews the lease on the worker's own clock"
    )
