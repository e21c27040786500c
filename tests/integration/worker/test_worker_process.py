"""`takt worker`'s polling loop in process, against the lanes on moto: it runs and deletes
messages (a run's once its lease is taken), serves lanes by weight, gives running work back when
stopped, and leaves executions of handlers it lacks waiting in the lane."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from takt.clock import ManualClock
from takt.handlers import Registry
from takt.models.lanes import Outgoing
from takt.models.records import ExecState, ExecutionRecord
from takt.targets.http import HttpTarget
from takt.targets.publish import QueueTopicTarget
from takt.targets.router import TargetRouter
from takt.wiring import Services
from takt.worker.process import WorkerOptions, WorkerProcess
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.integration.worker import handlers
from tests.integration.worker.conftest import runner_for, stored, submit_to
from tests.support.env import ServicesFactory
from tests.support.lanes import drain
from tests.support.threads import poll_until

DEADLINE_SEC = 15.0


@contextmanager
def running(
    svc: Services, runner: ExecutionRunner | None = None, **options: object
) -> Iterator[WorkerProcess]:
    """A worker process's loop in a thread; stopped (with its grace) when the block ends."""
    process = WorkerProcess(
        svc.settings,
        svc.clients.sqs,
        runner or runner_for(svc),
        WorkerOptions(**options),  # type: ignore[arg-type]
    )
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    try:
        yield process
    finally:
        process.stop()
        thread.join(timeout=DEADLINE_SEC)
        assert not thread.is_alive(), "the worker loop did not end"


def _queued(
    svc: Services, clock: ManualClock, target: str, payload: object, **fields: object
) -> ExecutionRecord:
    record, _ = submit_to(svc, clock, target, payload, **fields)
    svc.lanes.send([Outgoing.of(record)])
    return record


def _messages_left(svc: Services, lane: str = "default") -> int:
    attrs = svc.clients.sqs.get_queue_attributes(
        QueueUrl=svc.settings.lane_url(lane),
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return sum(int(v) for v in attrs.values())


def test_the_worker_runs_what_the_lanes_hold_and_deletes_the_messages(
    svc: Services, clock: ManualClock, key: str
) -> None:
    deletes = _delete_requests(svc)
    records = [_queued(svc, clock, "handler:it.ok", {"key": key}) for _ in range(3)]

    # A flush interval longer than the test: the deletes wait for the stop, which sends them.
    with running(svc, concurrency=2, delete_flush_sec=60.0):
        poll_until(lambda: len(handlers.calls(key)) == 3, "three runs")
        poll_until(
            lambda: all(stored(svc, r).state == ExecState.SUCCEEDED for r in records), "done"
        )

    assert sorted(c.execution_id for c in handlers.calls(key)) == sorted(
        r.execution_id for r in records
    )
    assert _messages_left(svc) == 0
    assert deletes == [("DeleteMessageBatch", 3)], (
        "three deletes cost one SQS request (DeleteMessageBatch), sent when the worker stops"
    )


def _delete_requests(svc: Services) -> list[tuple[str, int]]:
    """The delete requests the worker sends, as (operation, messages)."""
    sent: list[tuple[str, int]] = []

    def record(model: Any, params: dict[str, Any], **_: object) -> None:
        if model.name == "DeleteMessage":
            sent.append((model.name, 1))
        elif model.name == "DeleteMessageBatch":
            sent.append((model.name, len(params["Entries"])))

    svc.clients.sqs.meta.events.register("provide-client-params.sqs", record)
    return sent


def test_a_long_run_holds_no_message_once_leased_and_none_reaches_another_worker(
    make_svc: ServicesFactory, clock: ManualClock, key: str
) -> None:
    # Received with a visibility of twice the lease (3 s); the run lasts longer than that: 40
    # heartbeats at least 0.1 s apart, and it never asks SQS to extend anything.
    svc = make_svc(lease_sec=1.5, heartbeat_sec=0.1, clock_margin_sec=0.5)
    asked = _visibility_changes(svc)
    record = _queued(svc, clock, "handler:it.wait", {"key": key})

    with running(svc):
        poll_until(lambda: stored(svc, record).state == ExecState.RUNNING, "the lease")
        # The delete waits in the worker's batch at most its flush interval (0.1 s), inside
        # the message's 3 s visibility (a loaded machine may take longer than the interval).
        poll_until(
            lambda: _messages_left(svc) == 0,
            "issue 26: the leased run's message deleted in the worker's next batch",
            timeout_sec=2.5,
        )
        held_while_running = _messages_left(svc)
        # At least four seconds (longer on a loaded machine, hence the wait's bound).
        poll_until(
            lambda: stored(svc, record).heartbeat_seq >= 40,
            "four seconds of heartbeats",
            timeout_sec=60.0,
        )
        seen_by_another = drain(svc)
        handlers.gate(key).set()
        poll_until(lambda: stored(svc, record).state == ExecState.SUCCEEDED, "the run's end")

    assert held_while_running == 0, (
        "issue 26: once the lease is taken the run holds none of the lane's in-flight messages"
    )
    assert (seen_by_another, asked) == ([], []), "no copy reappears, and no visibility is paid"
    assert [a.outcome for a in stored(svc, record).attempts] == ["succeeded"]


def _visibility_changes(svc: Services) -> list[int]:
    """The visibility timeouts the worker asks SQS for, as it sends them."""
    asked: list[int] = []

    def record(params: dict[str, object], **_: object) -> None:
        asked.append(int(str(params["VisibilityTimeout"])))

    svc.clients.sqs.meta.events.register(
        "provide-client-params.sqs.ChangeMessageVisibility", record
    )
    return asked


def test_with_every_lane_busy_rounds_follow_the_weights_and_the_low_lane_is_served(
    svc: Services, clock: ManualClock, key: str
) -> None:
    lanes: dict[str, str] = {}
    for lane in ("high", "low"):
        for _ in range(7):
            record = _queued(svc, clock, "handler:it.ok", {"key": key}, priority=lane)
            lanes[record.execution_id] = lane

    with running(svc, concurrency=1):
        poll_until(lambda: len(handlers.calls(key)) == 14, "every run")

    order = [lanes[c.execution_id] for c in handlers.calls(key)]
    assert order[:7] == ["high", "high", "high", "low", "high", "high", "high"]


def test_on_stop_a_run_still_going_after_the_grace_is_given_back_for_another_worker(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record = _queued(svc, clock, "handler:it.wait", {"key": key})

    with running(svc, grace_sec=0.2):
        poll_until(lambda: stored(svc, record).state == ExecState.RUNNING, "the run's start")

    after = stored(svc, record)
    assert (after.state, after.attempt) == (ExecState.PENDING, 1)
    assert [a.outcome for a in after.attempts] == ["given_back"]
    assert [m.attempt for m in drain(svc)] == [1]
    assert _messages_left(svc) == 0
    poll_until(lambda: bool(handlers.calls(key)), "the handler's stop")
    assert [c.stop_reason for c in handlers.calls(key)] == ["shutdown"]


def test_on_stop_no_new_work_is_taken_and_a_run_ending_within_the_grace_completes(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record = _queued(svc, clock, "handler:it.wait", {"key": key})

    with running(svc, grace_sec=30) as process:
        poll_until(lambda: stored(svc, record).state == ExecState.RUNNING, "the run's start")
        process.stop()
        later = _queued(svc, clock, "handler:it.ok", {"key": key})
        handlers.gate(key).set()
        poll_until(lambda: stored(svc, record).state == ExecState.SUCCEEDED, "the run's end")

    assert [a.outcome for a in stored(svc, record).attempts] == ["succeeded"]
    assert stored(svc, later).state == ExecState.PENDING
    assert [m.execution_id for m in drain(svc)] == [later.execution_id]


def test_an_execution_for_a_handler_no_running_worker_has_waits_in_its_lane_until_one_does(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record = _queued(svc, clock, "handler:it.ok", {"key": key})
    without = ExecutionRunner(
        RunnerSettings.of(svc.settings),
        svc.jobs,
        svc.executions,
        svc.lanes,
        TargetRouter(
            HttpTarget(),
            QueueTopicTarget(svc.clients.sqs, svc.clients.sns, svc.clients.events, "us-east-1"),
            Registry(),
        ),
        svc.clock,
        unserved_delay_sec=1,
    )

    with running(svc, without) as process:
        # Two round trips through the lane, each sending one fresh copy of the message back.
        poll_until(lambda: process.processed >= 2, "the message circling")

    waited = stored(svc, record)
    assert (waited.state, waited.attempt, waited.attempts) == (ExecState.PENDING, 1, [])
    assert _messages_left(svc) == 1
    with running(svc):
        poll_until(
            lambda: stored(svc, record).state == ExecState.SUCCEEDED, "a serving worker's run"
        )
    assert [c.attempt for c in handlers.calls(key)] == [1]
