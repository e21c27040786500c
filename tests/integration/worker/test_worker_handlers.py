"""Registered handlers through the real runner: outcomes, retries, and handlers nobody serves."""

from __future__ import annotations

from dataclasses import replace

import pytest

import examples.handlers  # noqa: F401 - registers the example's handlers
from takt.clock import ManualClock
from takt.models.records import ExecState, RetryPolicy
from takt.wiring import Services
from takt.worker.runner import UNSERVED_DELAY_SEC, ExecutionRunner, RunnerSettings
from tests.integration.worker import handlers
from tests.integration.worker.conftest import Submit, runner_for, stored
from tests.support.lanes import RecordingLanes, delayed_count, drain, visible_count

FAST_RETRY = RetryPolicy(backoff="fixed", initial_interval="1s", jitter="none")


def test_a_handler_that_returns_succeeds_its_execution(
    svc: Services, submit: Submit, key: str
) -> None:
    record, message = submit("handler:it.ok", {"key": key})

    outcome = runner_for(svc).process(message)

    after = stored(svc, record)
    assert (outcome.state, after.state) == ("succeeded", ExecState.SUCCEEDED)
    assert [(a.attempt, a.outcome) for a in after.attempts] == [(1, "succeeded")]
    assert handlers.calls(key) == [handlers.Call(key, record.execution_id, 1)]


def test_a_permanent_error_fails_the_execution_without_a_retry(
    svc: Services, submit: Submit, key: str
) -> None:
    record, message = submit("handler:it.refuse", {"key": key})

    outcome = runner_for(svc).process(message)

    after = stored(svc, record)
    assert (outcome.state, after.state, after.error) == ("failed", ExecState.FAILED, "never works")
    assert drain(svc) == []
    assert delayed_count(svc) == 0


def test_an_exception_is_retried_with_backoff_then_dead(
    svc: Services, submit: Submit, key: str, clock: ManualClock
) -> None:
    record, message = submit(
        "handler:it.fail", {"key": key}, retry=FAST_RETRY.model_copy(update={"max_attempts": 2})
    )
    runner = runner_for(svc)

    first = runner.process(message)
    waiting = stored(svc, record)
    clock.advance(1)
    second = runner.process(message.model_copy(update={"attempt": 2}))

    assert (first.state, waiting.attempt, waiting.error) == ("retry_wait", 2, "RuntimeError: boom")
    assert waiting.retry_at == clock.now()
    assert delayed_count(svc) == 1
    dead = stored(svc, record)
    assert (second.state, dead.state, dead.attempt) == ("dead", ExecState.DEAD, 2)
    assert [(a.attempt, a.outcome) for a in dead.attempts] == [(1, "retry"), (2, "dead")]
    assert [c.attempt for c in handlers.calls(key)] == [1, 2]


def test_a_payload_that_does_not_fit_the_model_is_retried_without_calling_the_handler(
    svc: Services, submit: Submit, key: str
) -> None:
    record, message = submit("handler:it.typed", {"key": key, "count": "lots"})

    outcome = runner_for(svc).process(message)

    after = stored(svc, record)
    assert (outcome.state, after.attempt) == ("retry_wait", 2)
    assert after.error == "payload does not fit Counted: count"
    assert handlers.calls(key) == []


def test_a_message_for_a_handler_this_worker_lacks_goes_back_untouched_and_waits(
    svc: Services, submit: Submit, clock: ManualClock
) -> None:
    record, message = submit("handler:not.served.here", {})
    resend_after = svc.settings.pending_resend_after_sec

    outcome = runner_for(svc).process(message)

    after = stored(svc, record)
    assert outcome.state == "unserved"
    assert (after.state, after.attempt, after.attempts, after.started_at) == (
        ExecState.PENDING,
        1,
        [],
        None,
    )
    # Visible as queue depth: the copy waits in the lane, delayed, never in a dead-letter queue.
    assert (visible_count(svc), delayed_count(svc)) == (0, 1)
    # Its check time moved past the copy's arrival: the watchdog adds no second message at the
    # moment it would have resent the original.
    clock.advance(resend_after + svc.settings.clock_margin_sec + 1)
    assert svc.watchdog.sweep(clock.now()).resent == 0
    clock.advance(UNSERVED_DELAY_SEC)
    assert svc.watchdog.sweep(clock.now()).resent == 1


def test_an_attempt_whose_handler_no_worker_serves_fails_after_the_unserved_limit(
    svc: Services, submit: Submit, clock: ManualClock
) -> None:
    record, message = submit("handler:not.shipped", {})
    lanes = RecordingLanes(svc)
    limit = 30.0
    settings = replace(RunnerSettings.of(svc.settings), unserved_limit_sec=limit)
    runner = ExecutionRunner(settings, svc.jobs, svc.executions, lanes, svc.targets, clock)
    outcomes = []
    # Each delivery meets a worker without the handler, which sends back a copy 5 s later.
    for _ in range(int(limit // UNSERVED_DELAY_SEC) + 2):
        outcomes.append(runner.process(message).state)
        if outcomes[-1] != "unserved":
            break
        message = lanes.sent[-1].message
        clock.advance(UNSERVED_DELAY_SEC)

    after = stored(svc, record)
    assert (outcomes[-1], after.state, len(outcomes)) == (
        "failed",
        ExecState.FAILED,
        int(limit // UNSERVED_DELAY_SEC) + 1,
    ), (
        "an execution of a handler no worker serves ends (docs/WORKERS.md): failed once it has "
        f"been sent back for unserved_limit_sec ({limit:g} s), not pending for ever; "
        f"{len(outcomes)} deliveries ended {outcomes[-1]} and left it {after.state}"
    )
    assert after.error is not None
    assert "no worker serves handler 'not.shipped'" in after.error
    assert (after.attempt, after.attempts) == (1, [])


def test_a_message_without_the_handler_name_is_given_back_after_its_lease(
    svc: Services, submit: Submit
) -> None:
    record, message = submit("handler:not.served.here", {})

    outcome = runner_for(svc).process(message.model_copy(update={"handler": None}))

    after = stored(svc, record)
    assert outcome.state == "unserved"
    assert (after.state, after.attempt, after.lease_token) == (ExecState.PENDING, 1, None)
    assert [(a.attempt, a.outcome) for a in after.attempts] == [(1, "unserved")]
    assert delayed_count(svc) == 1


def test_the_example_handlers_run_succeed_and_fail_as_documented(
    svc: Services, submit: Submit, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = runner_for(svc)
    sent, sent_message = submit("handler:send_report", {"report": "daily", "recipients": ["a@x"]})
    unknown, unknown_message = submit("handler:send_report", {"report": "yearly"})
    early, early_message = submit("handler:send_report", {"report": "weekly"})
    export, export_message = submit(
        "handler:export_rows", {"rows": 3, "rows_per_step": 2, "seconds_per_step": 0}
    )

    outcomes = [
        runner.process(m).state
        for m in (sent_message, unknown_message, early_message, export_message)
    ]

    assert outcomes == ["succeeded", "failed", "retry_wait", "succeeded"]
    assert stored(svc, unknown).error == "no report named 'yearly'"
    assert stored(svc, early).error == "ValueError: no recipients yet"
    printed = capsys.readouterr().out
    assert f"daily report to a@x (execution {sent.execution_id}, attempt 1)" in printed
    assert f"exported 3 rows (execution {export.execution_id})" in printed
