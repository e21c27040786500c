"""The runner's supervision of a call: timeouts, heartbeats, a lost lease, and giving an
execution back when its host must stop (a Lambda near its timeout, a worker shutting down)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from functions.worker.handler import handler as worker_handler
from takt.clock import ManualClock
from takt.executions.rules import MAX_GIVE_BACKS
from takt.models.lanes import Outgoing
from takt.models.records import ExecState, RetryPolicy
from takt.store.executions import Transition
from takt.wiring import Services, install
from takt.worker.deadline import HostDeadline
from takt_cli.local.events import LocalContext, sqs_event
from tests.integration.worker import handlers
from tests.integration.worker.conftest import runner_for, stored, submit_to
from tests.support.env import ServicesFactory
from tests.support.lanes import drain
from tests.support.threads import in_thread, poll_until

FIXED = RetryPolicy(backoff="fixed", initial_interval="30s", jitter="none")
DEADLINE_SEC = 10.0


def test_a_handler_past_its_timeout_is_told_to_stop_and_the_attempt_is_retried(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.wait", {"key": key}, timeout_sec=1)

    thread, outcomes = in_thread(lambda: runner_for(svc).process(message))
    thread.join(timeout=10)

    after = stored(svc, record)
    assert [(o.state, after.attempt, after.error) for o in outcomes] == [
        ("retry_wait", 2, "timed out after 1s")
    ], "a call past its timeout_sec is stopped and is a retryable failure"
    poll_until(lambda: bool(handlers.calls(key)), "the handler's stop")
    assert [c.stop_reason for c in handlers.calls(key)] == ["timeout"]


def test_a_handler_that_ignores_the_stop_is_no_longer_waited_for(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.stubborn", {"key": key}, timeout_sec=1)

    outcome = runner_for(svc).process(message)

    # The attempt is settled while the handler still runs (its gate opens at teardown).
    assert handlers.calls(key) == []
    assert (outcome.state, stored(svc, record).attempts[0].outcome) == ("retry_wait", "retry")


def test_heartbeats_extend_the_lease_while_the_handler_runs_and_the_lease_is_told_once(
    make_svc: ServicesFactory, clock: ManualClock, key: str
) -> None:
    svc = make_svc(heartbeat_sec=0.05)
    record, message = submit_to(svc, clock, "handler:it.wait", {"key": key})
    at_lease: list[ExecState] = []
    thread, outcomes = in_thread(
        lambda: runner_for(svc).process(
            message, on_release=lambda: at_lease.append(stored(svc, record).state)
        )
    )

    poll_until(lambda: stored(svc, record).heartbeat_seq >= 2, "two heartbeats")
    clock.advance(60)
    poll_until(
        lambda: (
            stored(svc, record).lease_expires_at
            == int((clock.now() + timedelta(seconds=svc.settings.lease_sec)).timestamp() * 1000)
        ),
        "a lease extended from the new now",
    )
    handlers.gate(key).set()
    thread.join(timeout=DEADLINE_SEC)

    assert at_lease == [ExecState.RUNNING], (
        "issue 26: the host is told once, when the lease is written, whatever the heartbeats"
    )
    assert [o.state for o in outcomes] == ["succeeded"]


def test_a_heartbeat_fenced_out_stops_the_handler_and_writes_nothing_but_the_count(
    make_svc: ServicesFactory, clock: ManualClock, key: str
) -> None:
    svc = make_svc(heartbeat_sec=0.05)
    record, message = submit_to(svc, clock, "handler:it.wait", {"key": key}, retry=FIXED)
    thread, outcomes = in_thread(lambda: runner_for(svc, "w-paused").process(message))
    poll_until(lambda: stored(svc, record).state == ExecState.RUNNING, "the lease")
    leased = stored(svc, record)

    # The watchdog reclaims the lease (as after a pause) and another worker takes attempt 2.
    svc.executions.transition(
        leased.tenant_id,
        leased.execution_id,
        Transition(
            expect={"state": ExecState.RUNNING, "lease_token": leased.lease_token},
            set={"state": ExecState.PENDING, "attempt": 2},
            remove=("lease_token",),
        ),
    )
    thread.join(timeout=DEADLINE_SEC)

    after = stored(svc, record)
    assert [o.state for o in outcomes] == ["fenced"]
    assert (after.state, after.attempt, after.fenced_reports) == (ExecState.PENDING, 2, 1)
    assert after.attempts == []
    poll_until(lambda: bool(handlers.calls(key)), "the handler's stop")
    assert [c.stop_reason for c in handlers.calls(key)] == ["lease_lost"]


def test_at_its_host_deadline_an_execution_is_given_back_at_the_same_attempt(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.wait", {"key": key})

    outcome = runner_for(svc).process(message, host=HostDeadline.after(0.2))

    after = stored(svc, record)
    assert outcome.state == "given_back"
    assert (after.state, after.attempt, after.lease_token) == (ExecState.PENDING, 1, None)
    assert [(a.attempt, a.outcome) for a in after.attempts] == [(1, "given_back")]
    assert [(m.execution_id, m.attempt) for m in drain(svc)] == [(record.execution_id, 1)]
    poll_until(lambda: bool(handlers.calls(key)), "the handler's stop")
    assert [c.stop_reason for c in handlers.calls(key)] == ["shutdown"]


def test_an_execution_given_back_again_and_again_finally_counts_as_a_failed_attempt(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.wait", {"key": key}, retry=FIXED)
    runner = runner_for(svc)

    outcomes = [
        runner.process(message, host=HostDeadline.after(0.1)).state for _ in range(MAX_GIVE_BACKS)
    ]

    after = stored(svc, record)
    assert outcomes == ["given_back"] * (MAX_GIVE_BACKS - 1) + ["retry_wait"]
    assert (after.state, after.attempt) == (ExecState.RETRY_WAIT, 2)
    assert after.error is not None and after.error.startswith(f"given back {MAX_GIVE_BACKS} times")


def test_a_host_out_of_time_before_the_start_sends_the_message_back_without_a_lease(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.ok", {"key": key})

    outcome = runner_for(svc).process(message, host=HostDeadline.after(-1))

    after = stored(svc, record)
    assert outcome.state == "given_back"
    assert (after.state, after.attempts, after.started_at) == (ExecState.PENDING, [], None)
    assert [m.attempt for m in drain(svc)] == [1]
    assert handlers.calls(key) == []


# A given-back execution is no outcome to count: the handler publishes no metric for it.
@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_the_worker_lambda_gives_an_execution_back_before_its_own_timeout(
    make_svc: ServicesFactory, clock: ManualClock, key: str
) -> None:
    svc = make_svc(give_back_margin_sec=0.2)
    record, message = submit_to(svc, clock, "handler:it.wait", {"key": key})
    body = Outgoing.of(record).message.model_dump_json()
    event = sqs_event(
        "arn:aws:sqs:us-east-1:000000000000:takt-default",
        [{"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": body}],
    )
    install(svc)
    try:
        answer: Any = worker_handler(event, LocalContext("takt-worker", timeout_ms=600))
    finally:
        install(None)

    after = stored(svc, record)
    assert answer == {"batchItemFailures": []}
    assert (after.state, after.attempt) == (ExecState.PENDING, 1)
    assert [a.outcome for a in after.attempts] == ["given_back"]
    assert [(m.execution_id, m.attempt) for m in drain(svc)] == [
        (record.execution_id, message.attempt)
    ]


def test_the_worker_lambda_serves_the_handlers_of_its_handler_modules_setting(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(handler_modules="tests.integration.worker.env_handlers")
    record, _ = submit_to(svc, clock, "handler:it.from_env")
    event = sqs_event(
        "arn:aws:sqs:us-east-1:000000000000:takt-default",
        [
            {
                "MessageId": "m-1",
                "ReceiptHandle": "r-1",
                "Body": Outgoing.of(record).message.model_dump_json(),
            }
        ],
    )
    install(svc)
    try:
        worker_handler(event, LocalContext("takt-worker"))
    finally:
        install(None)

    # Imported only now: the handler must have been registered by the setting, not by this test.
    from tests.integration.worker import env_handlers  # noqa: PLC0415 - the setting, not this test, must register the handler

    assert stored(svc, record).state == ExecState.SUCCEEDED
    assert env_handlers.runs == [record.execution_id]
