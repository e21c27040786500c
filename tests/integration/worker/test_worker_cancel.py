"""Cancelling executions: waiting ones at once, running ones through their worker's heartbeat
(or the watchdog, if the worker died), never retried."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from takt.api.errors import ConflictingStateError
from takt.api.executions import ExecutionService
from takt.clock import ManualClock
from takt.models.records import ExecState, ExecutionRecord, RetryPolicy
from takt.store.executions import Transition
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring import Services, install
from tests.api.harness import PROBLEM_JSON, Api
from tests.integration.worker import handlers
from tests.integration.worker.conftest import runner_for, stored, submit_to
from tests.support.env import ServicesFactory
from tests.support.faults import interleave
from tests.support.jobs import TENANT
from tests.support.lanes import delayed_count, drain
from tests.support.receiver import Receiver, Reply
from tests.support.threads import in_thread, poll_until

DEADLINE_SEC = 10.0
FIXED = RetryPolicy(backoff="fixed", initial_interval="30s", jitter="none")


@pytest.fixture
def fast(make_svc: ServicesFactory) -> Services:
    """Services whose workers heartbeat every 50 ms, so a cancel is noticed at once."""
    return make_svc(heartbeat_sec=0.05)


@pytest.fixture
def api(svc: Services) -> Iterator[Api]:
    install(svc)
    try:
        yield Api(svc)
    finally:
        install(None)


def test_a_pending_execution_is_cancelled_at_once_and_its_message_then_runs_nothing(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.ok", {"key": key})

    cancelled = ExecutionService(svc.api).cancel_execution(TENANT, record.execution_id)
    outcome = runner_for(svc).process(message)

    assert cancelled.state == ExecState.CANCELLED
    assert (outcome.state, outcome.detail) == ("cancelled", "duplicate or stale message")
    assert handlers.calls(key) == []
    assert svc.jobs.get(TENANT, record.job_id).last_outcome == "cancelled"
    assert svc.watchdog.sweep(clock.now() + timedelta(hours=1)).candidates == 0


def test_a_running_handler_is_stopped_at_its_next_heartbeat_and_not_retried(
    fast: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(fast, clock, "handler:it.wait", {"key": key}, retry=FIXED)
    thread, outcomes = in_thread(lambda: runner_for(fast).process(message))
    poll_until(lambda: stored(fast, record).state == ExecState.RUNNING, "the lease")

    requested = ExecutionService(fast.api).cancel_execution(TENANT, record.execution_id)
    thread.join(timeout=DEADLINE_SEC)

    after = stored(fast, record)
    assert (requested.state, requested.cancel_requested) == (ExecState.RUNNING, True)
    assert [o.state for o in outcomes] == ["cancelled"]
    assert (after.state, after.attempt) == (ExecState.CANCELLED, 1)
    assert [(a.attempt, a.outcome) for a in after.attempts] == [(1, "cancelled")]
    assert (drain(fast), delayed_count(fast)) == ([], 0)
    poll_until(lambda: bool(handlers.calls(key)), "the handler's stop")
    assert [c.stop_reason for c in handlers.calls(key)] == ["cancelled"]


def test_a_running_http_call_is_abandoned_when_cancelled(
    fast: Services, clock: ManualClock, receiver: Receiver
) -> None:
    answer = threading.Event()
    receiver.script(Reply(gate=answer))
    record, message = submit_to(fast, clock, receiver.url, timeout_sec=60)
    thread, outcomes = in_thread(lambda: runner_for(fast).process(message))
    receiver.wait_for_calls(1)

    ExecutionService(fast.api).cancel_execution(TENANT, record.execution_id)
    thread.join(timeout=DEADLINE_SEC)
    still_waiting = not answer.is_set()
    answer.set()

    assert still_waiting
    assert [o.state for o in outcomes] == ["cancelled"]
    assert stored(fast, record).state == ExecState.CANCELLED


def test_a_failure_after_the_cancel_but_before_a_heartbeat_is_cancelled_not_retried(
    svc: Services, clock: ManualClock, key: str
) -> None:
    # Default heartbeats (10 s): the worker only learns of the cancel from its retry write.
    record, message = submit_to(svc, clock, "handler:it.wait_then_fail", {"key": key})
    thread, outcomes = in_thread(lambda: runner_for(svc).process(message))
    poll_until(lambda: stored(svc, record).state == ExecState.RUNNING, "the lease")

    ExecutionService(svc.api).cancel_execution(TENANT, record.execution_id)
    handlers.gate(key).set()
    thread.join(timeout=DEADLINE_SEC)

    after = stored(svc, record)
    assert [o.state for o in outcomes] == ["cancelled"]
    assert (after.state, after.attempt) == (ExecState.CANCELLED, 1)
    assert (drain(svc), delayed_count(svc)) == ([], 0)


def test_the_watchdog_cancels_an_expired_lease_whose_cancel_was_asked_for(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record = _leased_by_a_dead_worker(svc, clock, key)
    ExecutionService(svc.api).cancel_execution(TENANT, record.execution_id)

    clock.advance(svc.settings.lease_sec + svc.settings.clock_margin_sec + 1)
    result = svc.watchdog.sweep(clock.now())

    after = stored(svc, record)
    assert (result.cancelled, result.lease_expired) == (1, 0)
    assert (after.state, after.attempt) == (ExecState.CANCELLED, 1)
    assert [a.outcome for a in after.attempts] == ["cancelled"]
    assert drain(svc) == []


def test_a_cancel_landing_between_the_watchdogs_read_and_write_wins_over_the_retry(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record = _leased_by_a_dead_worker(svc, clock, key)
    clock.advance(svc.settings.lease_sec + svc.settings.clock_margin_sec + 1)
    requested: list[str] = []

    def cancel_once() -> None:
        if not requested:
            requested.append(record.execution_id)
            ExecutionService(svc.api).cancel_execution(TENANT, record.execution_id)

    watchdog = Watchdog(
        WatchdogSettings.of(svc.settings),
        svc.jobs,
        svc.due,
        interleave(svc.executions, "get", cancel_once),
        svc.lanes,
    )

    first = watchdog.sweep(clock.now())
    second = watchdog.sweep(clock.now())

    assert (first.lease_expired, first.cancelled) == (0, 0)
    assert second.cancelled == 1
    assert stored(svc, record).state == ExecState.CANCELLED
    assert drain(svc) == []


def test_cancel_answers_202_then_409_once_finished_and_404_for_no_such_execution(
    api: Api, svc: Services, clock: ManualClock, key: str
) -> None:
    record, _ = submit_to(svc, clock, "handler:it.ok", {"key": key})
    path = f"/v1/executions/{record.execution_id}/cancel"

    first = api.request("POST", path)
    again = api.request("POST", path)
    missing = api.request("POST", "/v1/executions/job_x.20260302T120000000Z/cancel")

    assert (first.status, first.json["state"], first.json["cancel_requested"]) == (
        202,
        "cancelled",
        False,
    )
    assert (again.status, again.content_type) == (409, PROBLEM_JSON)
    assert "cancelled" in again.json["detail"]
    assert missing.status == 404


def test_a_rerun_of_a_cancelled_execution_is_not_cancelled_again(
    fast: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(fast, clock, "handler:it.wait", {"key": key})
    thread, _ = in_thread(lambda: runner_for(fast).process(message))
    poll_until(lambda: stored(fast, record).state == ExecState.RUNNING, "the lease")
    service = ExecutionService(fast.api)
    service.cancel_execution(TENANT, record.execution_id)
    thread.join(timeout=DEADLINE_SEC)

    rerun = service.retry_execution(TENANT, record.execution_id)
    handlers.gate(key).set()
    outcome = runner_for(fast).process(drain(fast)[0])

    assert (rerun.state, rerun.attempt, rerun.cancel_requested) == (ExecState.PENDING, 2, None)
    assert outcome.state == "succeeded"


def test_cancelling_a_finished_execution_is_a_conflict(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.ok", {"key": key})
    runner_for(svc).process(message)

    with pytest.raises(ConflictingStateError, match="is succeeded"):
        ExecutionService(svc.api).cancel_execution(TENANT, record.execution_id)


def _leased_by_a_dead_worker(svc: Services, clock: ManualClock, key: str) -> ExecutionRecord:
    """An execution leased by a worker that then died: it will never heartbeat again."""
    record, _ = submit_to(svc, clock, "handler:it.ok", {"key": key})
    expires = int((clock.now() + timedelta(seconds=svc.settings.lease_sec)).timestamp() * 1000)
    return svc.executions.transition(
        TENANT,
        record.execution_id,
        Transition(
            expect={"state": ExecState.PENDING, "attempt": 1},
            set={
                "state": ExecState.RUNNING,
                "lease_token": "dead-worker",
                "worker_id": "w-dead",
                "lease_expires_at": expires,
                "check_at": expires,
            },
        ),
    )
