"""A function killed inside a run's advance step: between recording a task's completion and
telling its downstream tasks, between creating a downstream execution and sending it, and before
the run counts the ended task. The watchdog's backstop (or the resend of a pending execution)
finishes the run: every task runs exactly once, and the run ends as it should."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.dispatch.lanes import LaneSender
from takt.models.ids import execution_id
from takt.models.records import ExecState
from takt.store.runs import RunStore
from takt.wiring import Services
from takt.workflows.engine import RunEngine
from tests.support.faults import Crash
from tests.support.jobs import TENANT
from tests.support.lanes import drain
from tests.support.workflows import calls, fail, fire, run_of, states, store_workflow, task, work

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DUE = NOON + timedelta(minutes=1)


class Once:
    """Makes `owner.method` raise Crash on its first call (before or after doing its work)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: type, method: str, when: str):
        real: Callable[..., Any] = getattr(owner, method)
        self.fired = False

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self.fired:
                return real(*args, **kwargs)
            self.fired = True
            if when == "before":
                raise Crash(f"before {method}")
            real(*args, **kwargs)
            raise Crash(f"after {method}")

        monkeypatch.setattr(owner, method, wrapper)


CRASH_POINTS = {
    # The completion is recorded on the task item; no downstream task has heard of it.
    "after recording the completion": (RunStore, "end", "after"),
    # The downstream's execution is created; its message never sent.
    "before sending downstream": (LaneSender, "send", "before"),
    # Downstream dispatched; the run never counts the ended task.
    "before counting the ended task": (RunStore, "note_ended", "before"),
}


def _work_through_crashes(svc: Services) -> int:
    """The worker loop, where a crashed message is dropped as a dead function's would be (its
    redelivery finds the execution terminal and does nothing)."""
    crashes = 0
    for _ in range(50):
        messages = drain(svc)
        if not messages:
            return crashes
        for message in messages:
            try:
                svc.runner.process(message)
            except Crash:
                crashes += 1
    raise AssertionError("lanes still busy")


def _backstop(svc: Services, clock: ManualClock) -> None:
    """Let the run's check time pass and sweep, as the watchdog's timer would."""
    clock.advance(svc.settings.pending_resend_after_sec + svc.settings.clock_margin_sec + 1)
    svc.watchdog.sweep(clock.now())


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_a_crash_in_the_advance_step_is_finished_by_the_backstop(
    svc: Services, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    key = f"crash-{point}"
    tasks = [task(key, "a"), task(key, "b", "a"), task(key, "c", "a"), task(key, "d", "b", "c")]
    clock.set(DUE)
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)
    owner, method, when = CRASH_POINTS[point]
    crash = Once(monkeypatch, owner, method, when)
    crashes = _work_through_crashes(svc)
    assert crash.fired
    assert crashes == 1
    assert run_of(svc, run).state == ExecState.RUNNING  # stuck: nothing woke the rest up
    for _ in range(3):
        _backstop(svc, clock)
        work(svc)
    assert calls(key) == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert states(svc, run) == dict.fromkeys("abcd", "succeeded")
    assert run_of(svc, run).state == ExecState.SUCCEEDED


def test_a_crash_while_propagating_a_failure_still_fails_the_run(
    svc: Services, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "crash-failure"
    fail(key, "a")
    tasks = [task(key, "a"), task(key, "b", "a"), task(key, "c", "b"), task(key, "x")]
    clock.set(DUE)
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)
    Once(monkeypatch, RunEngine, "_propagate", "before")
    _work_through_crashes(svc)
    assert run_of(svc, run).state == ExecState.RUNNING
    _backstop(svc, clock)
    assert states(svc, run) == {
        "a": "failed",
        "b": "upstream_failed",
        "c": "upstream_failed",
        "x": "succeeded",
    }
    assert run_of(svc, run).state == ExecState.FAILED
    assert calls(key) == {"a": 1, "x": 1}


def test_a_run_that_died_while_starting_is_started_by_the_backstop(
    svc: Services, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "crash-start"
    tasks = [task(key, "a"), task(key, "b", "a")]
    clock.set(DUE)
    Once(monkeypatch, RunStore, "put_all", "before")
    job = store_workflow(svc, tasks, NOON, DUE)
    with pytest.raises(Crash):
        fire(svc, job, DUE)
    run = svc.executions.get(TENANT, execution_id(job.job_id, DUE))
    assert run.state == ExecState.RUNNING
    assert calls(key) == {}
    _backstop(svc, clock)
    work(svc)
    assert calls(key) == {"a": 1, "b": 1}
    assert run_of(svc, run).state == ExecState.SUCCEEDED
