"""`takt worker` holds a lane message only until its execution's lease is taken, or until the
hold of a message claimed ahead of its time begins (issue 26).

Each test runs the worker's loop (`WorkerProcess.run`) over a fake SQS and the real runner on
in-memory tables (tests/support/fakes), and checks what the worker asked of SQS: the message of a
run is deleted once the lease is written and before the call ends, so a run holds none of SQS's
in-flight messages (at most 120,000 a queue; its delete is queued at the lease and sent in the
worker's next batch); a message that takes no lease is deleted without a call; an infrastructure
error before the lease leaves the message to come back, and one after it leaves the execution to
the lease and the watchdog. The loop stops itself when the fake lane is empty, so no test waits on
a clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from botocore.exceptions import ClientError

from takt.clock import ManualClock
from takt.config import LANES, Settings
from takt.executions.lifecycle import Lifecycle
from takt.models.calls import CallContext, TargetResult
from takt.models.ids import execution_id
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import ExecState, ExecutionRecord
from takt.store.ports import Transition
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.worker.deletes import MessageDeletes
from takt.worker.process import INFRA_RETRY_SEC, WorkerOptions, WorkerProcess
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.support.fakes import FakeDue, FakeExecutions, FakeJobs, FakeLanes
from tests.support.jobs import TENANT, make_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
LEASE_SEC = 30.0
MARGIN_SEC = 2.0
RECEIPT = "receipt-1"
JOIN_SEC = 10.0

Answer = Callable[[CallContext], TargetResult]


class FakeSqs:
    """The three SQS calls `WorkerProcess` makes, on one lane holding the messages given.

    Each request is logged in order as (what, receipt, seconds), a batch's deletes one by one.
    An empty receive that would long-poll calls `idle` instead (the test's worker stops there),
    so the loop ends at once.
    """

    def __init__(self, lane_url: str, bodies: list[str]) -> None:
        self._lane_url = lane_url
        self._bodies = bodies
        self.idle: Callable[[], None] = lambda: None
        self.requests: list[tuple[str, str, int | None]] = []

    def receive_message(self, **params: Any) -> dict[str, Any]:
        if params["QueueUrl"] == self._lane_url and self._bodies:
            body = self._bodies.pop(0)
            return {"Messages": [{"MessageId": "m-1", "ReceiptHandle": RECEIPT, "Body": body}]}
        if params["WaitTimeSeconds"] > 0:
            self.idle()
        return {}

    def delete_message_batch(self, **params: Any) -> dict[str, Any]:
        for entry in params["Entries"]:
            self.requests.append(("delete", entry["ReceiptHandle"], None))
        return {"Successful": [], "Failed": []}

    def change_message_visibility(self, **params: Any) -> None:
        self.requests.append(("visibility", params["ReceiptHandle"], params["VisibilityTimeout"]))


class Targets:
    """A target that answers each call with `answer` and notes, at the call, SQS's requests
    and the deletes the worker queued for its next batch (takt.worker.deletes)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.calls: list[CallContext] = []
        self.sqs_at_call: list[list[tuple[str, str, int | None]]] = []
        self.sqs: FakeSqs | None = None
        self.deletes: MessageDeletes | None = None

    def serves(self, handler: str) -> bool:
        return True

    def call(self, target: str, ctx: CallContext) -> TargetResult:
        assert self.sqs is not None and self.deletes is not None
        self.calls.append(ctx)
        queued = [("delete", receipt, None) for receipt in self.deletes.waiting()]
        self.sqs_at_call.append([*self.sqs.requests, *queued])
        return self.answer(ctx)


class World:
    def __init__(self, answer: Answer) -> None:
        urls = {lane: f"https://sqs.test/{lane}" for lane in LANES}
        self.settings = Settings(lease_sec=LEASE_SEC, clock_margin_sec=MARGIN_SEC, lane_urls=urls)
        self.clock = ManualClock(NOON)
        self.jobs = FakeJobs()
        self.executions = FakeExecutions()
        self.lanes = FakeLanes()
        self.targets = Targets(answer)
        self.lifecycle = Lifecycle(self.settings, self.jobs, self.executions, self.lanes)
        # The worker's metric values, and its loop while one runs (a target may sample it).
        self.emitted: list[tuple[str, float]] = []
        self.process: WorkerProcess | None = None
        # Each hold of a message claimed ahead: its length, and SQS's requests and the queued
        # deletes as it began.
        self.holds: list[tuple[float, list[tuple[str, str, int | None]]]] = []
        self.runner = ExecutionRunner(
            RunnerSettings.of(self.settings),
            self.jobs,
            self.executions,
            self.lanes,
            self.targets,
            self.clock,
            worker_id="w1",
            sleep=self.hold,
            monotonic=self.clock.monotonic,
        )

    def hold(self, seconds: float) -> None:
        """The runner's sleep: noted with what SQS was asked so far, then the clock moves."""
        assert self.targets.sqs is not None and self.targets.deletes is not None
        queued = [("delete", receipt, None) for receipt in self.targets.deletes.waiting()]
        self.holds.append((seconds, [*self.targets.sqs.requests, *queued]))
        self.clock.advance(seconds)

    def message(self, at: datetime = NOON) -> LaneMessage:
        """A pending execution of a job due `at`, claimed at noon, and its lane message."""
        job = self.jobs.put(make_job(now=NOON, next_run_time=at))
        record = ExecutionRecord.for_job(
            job, execution_id(job.job_id, at), at, ExecState.PENDING, NOON
        )
        assert self.executions.create(record, check_at_ms=self.lifecycle.check_at(NOON))
        return Outgoing.of(record).message

    def execution(self, message: LaneMessage) -> ExecutionRecord:
        return self.executions.get(TENANT, message.execution_id)

    def work(self, message: LaneMessage) -> FakeSqs:
        """Run a worker's loop until its lane is empty and its run has ended; SQS's log."""
        sqs = FakeSqs(self.settings.lane_url("default"), [message.model_dump_json()])
        self.targets.sqs = sqs
        process = WorkerProcess(
            self.settings,
            cast(Any, sqs),
            self.runner,
            WorkerOptions(concurrency=4),
            emit=lambda name, unit, value: self.emitted.append((name, value)),
        )
        self.process = process
        self.targets.deletes = process.deletes
        sqs.idle = process.stop
        loop = threading.Thread(target=process.run, daemon=True)
        loop.start()
        loop.join(timeout=JOIN_SEC)
        assert not loop.is_alive(), "the worker loop did not end"
        assert process.processed == 1
        return sqs


def answering(ctx: CallContext) -> TargetResult:
    return TargetResult("success")


def refuse_the_write(number: int) -> Callable[[str, Transition], None]:
    """A `before_transition` that fails the `number`-th write as DynamoDB unreachable would."""
    seen = [0]

    def refuse(execution: str, change: Transition) -> None:
        seen[0] += 1
        if seen[0] == number:
            raise ClientError({"Error": {"Code": "InternalServerError"}}, "UpdateItem")

    return refuse


def test_a_runs_message_is_deleted_once_its_lease_is_taken_and_before_its_call() -> None:
    world = World(answering)
    message = world.message()

    sqs = world.work(message)

    assert world.targets.sqs_at_call == [[("delete", RECEIPT, None)]], (
        "issue 26: the message's delete is sent or queued once the lease is written, before the "
        "call, so a run holds no in-flight message"
    )
    assert sqs.requests == [("delete", RECEIPT, None)], "deleted once, and never extended"
    assert world.execution(message).state == ExecState.SUCCEEDED


def test_a_message_claimed_ahead_is_deleted_before_its_hold_and_run_at_its_time() -> None:
    world = World(answering)
    message = world.message(at=NOON + timedelta(seconds=1))

    sqs = world.work(message)

    assert world.holds == [(1.0, [("delete", RECEIPT, None)])], (
        "issue 26: a message claimed ahead is released before its hold, so the second before "
        "its time holds no in-flight message"
    )
    assert sqs.requests == [("delete", RECEIPT, None)], "released once, not again at the lease"
    after = world.execution(message)
    assert (after.state, after.started_at) == (ExecState.SUCCEEDED, NOON + timedelta(seconds=1)), (
        "invariant 5: released early, it still starts on its time"
    )


def test_a_claimed_ahead_execution_failing_after_its_hold_is_sent_again_at_its_check() -> None:
    world = World(answering)
    message = world.message(at=NOON + timedelta(seconds=1))
    world.executions.before_transition = refuse_the_write(1)

    sqs = world.work(message)
    world.executions.before_transition = None
    watchdog = Watchdog(
        WatchdogSettings.of(world.settings), world.jobs, FakeDue(), world.executions, world.lanes
    )
    # The watchdog acts on a check_at once it is past by the clock margin.
    check = world.settings.pending_resend_after_sec + MARGIN_SEC
    early = watchdog.sweep(NOON + timedelta(seconds=check - 1))
    swept = watchdog.sweep(NOON + timedelta(seconds=check + 1))

    assert sqs.requests == [("delete", RECEIPT, None)], (
        "issue 26: released before its hold, the message is not asked back by the error"
    )
    assert world.execution(message).state == ExecState.PENDING
    assert (early.resent, swept.resent) == (0, 1), (
        "invariant 1: the pending execution's check_at, at most the resend wait after its "
        "message could first be taken, is its way back: the watchdog sends it again there"
    )
    assert [o.message.execution_id for o in world.lanes.sent] == [message.execution_id]


def test_a_duplicate_message_of_a_leased_execution_is_deleted_without_a_call() -> None:
    world = World(answering)
    message = world.message()
    held = world.lifecycle.lease(message, "w0", NOON)

    sqs = world.work(message)

    after = world.execution(message)
    assert world.targets.calls == [], "invariant 3: the lease condition absorbs the duplicate"
    assert sqs.requests == [("delete", RECEIPT, None)], (
        "issue 26: a message that took no lease is deleted after the runner returns"
    )
    assert (after.state, after.lease_token) == (ExecState.RUNNING, held.lease_token)


def test_a_stale_message_of_an_attempt_the_watchdog_moved_on_is_deleted_without_a_call() -> None:
    world = World(answering)
    message = world.message()
    leased = world.lifecycle.lease(message, "w0", NOON)
    world.lifecycle.expire(leased, NOON + timedelta(seconds=LEASE_SEC + MARGIN_SEC + 1))

    sqs = world.work(message)

    after = world.execution(message)
    assert world.targets.calls == [], "invariant 3: attempt 1's copy runs nothing"
    assert sqs.requests == [("delete", RECEIPT, None)]
    assert (after.state, after.attempt) == (ExecState.PENDING, 2)


def test_an_infrastructure_error_before_the_lease_leaves_the_message_for_redelivery() -> None:
    world = World(answering)
    message = world.message()
    world.executions.before_transition = refuse_the_write(1)

    sqs = world.work(message)

    assert world.targets.calls == []
    assert sqs.requests == [("visibility", RECEIPT, INFRA_RETRY_SEC)], (
        "issue 26: before the lease the message is the execution's way back: made visible "
        "again soon, never deleted"
    )
    assert world.execution(message).state == ExecState.PENDING


def test_an_infrastructure_error_after_the_lease_leaves_the_execution_to_the_watchdog() -> None:
    world = World(answering)
    message = world.message()
    # The lease is written; the completion's write then fails (the table unreachable).
    world.executions.before_transition = refuse_the_write(2)

    sqs = world.work(message)
    world.executions.before_transition = None
    stranded = world.execution(message)
    watchdog = Watchdog(
        WatchdogSettings.of(world.settings), world.jobs, FakeDue(), world.executions, world.lanes
    )
    swept = watchdog.sweep(NOON + timedelta(seconds=LEASE_SEC + 2 * MARGIN_SEC + 1))

    after = world.execution(message)
    assert sqs.requests == [("delete", RECEIPT, None)], (
        "issue 26: after the lease the message is gone and is not asked back"
    )
    assert (stranded.state, stranded.worker_id) == (ExecState.RUNNING, "w1")
    assert swept.lease_expired == 1 and (after.state, after.attempt) == (ExecState.PENDING, 2), (
        "invariant 1: the watchdog takes the expired lease back and sends the next attempt"
    )
    assert [o.message.attempt for o in world.lanes.sent] == [2]


def test_a_leased_run_that_holds_no_message_is_still_reported_busy_at_each_sample() -> None:
    world: World

    def sampled_during_the_call(ctx: CallContext) -> TargetResult:
        assert world.process is not None
        world.process.sample_busy()
        return TargetResult("success")

    world = World(sampled_during_the_call)
    message = world.message()

    sqs = world.work(message)
    assert world.process is not None
    world.process.sample_busy()

    busy = [value for name, value in world.emitted if name == "WorkerSlotsBusy"]
    assert sqs.requests == [("delete", RECEIPT, None)]
    assert busy == [25.0, 25.0, 0.0], (
        "issue 26: with its message deleted at the lease, a run shows only in the busy slots: "
        "one of four at its start and at a sample during the call, none once it ended"
    )
