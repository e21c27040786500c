"""Workflow runs on moto through the real claimer, lanes, worker and terminal hook: the shapes
(diamond, chain), failure in the middle, trigger rules, overlap, and re-running a failed run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.handlers import Context, handler
from takt.models.records import ExecState, TaskSpec
from takt.wiring import Services
from takt.worker.runner import ExecutionRunner, RunnerSettings
from takt.workflows.engine import RunStateError
from tests.support.jobs import TENANT
from tests.support.lanes import drain
from tests.support.workflows import (
    TaskArgs,
    calls,
    engine,
    fail,
    fire,
    heal,
    run_of,
    states,
    store_workflow,
    task,
    work,
)

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DUE = NOON + timedelta(minutes=1)


@pytest.fixture(autouse=True)
def _at_due(clock: ManualClock) -> None:
    clock.set(DUE)


def test_diamond_runs_each_task_once_after_its_upstreams(svc: Services) -> None:
    key = "diamond"
    tasks = [task(key, "a"), task(key, "b", "a"), task(key, "c", "a"), task(key, "d", "b", "c")]
    job = store_workflow(svc, tasks, NOON, DUE)
    run = fire(svc, job, DUE)
    assert run.state == ExecState.RUNNING
    assert states(svc, run) == {"a": "pending", "b": "waiting", "c": "waiting", "d": "waiting"}
    work(svc)
    assert calls(key) == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert run_of(svc, run).state == ExecState.SUCCEEDED
    assert states(svc, run) == dict.fromkeys("abcd", "succeeded")
    # A fired one-off's success is not written to the job; the API reads it from the history.
    newest = svc.executions.newest_ended_after(TENANT, job.job_id, None, consistent=True)
    assert newest is not None
    assert (newest.execution_id, newest.state) == (run.execution_id, ExecState.SUCCEEDED)


def test_chain_runs_in_order_one_task_per_round(svc: Services) -> None:
    key = "chain"
    ids = [f"s{i}" for i in range(6)]
    tasks = [task(key, ids[0])] + [task(key, ids[i], ids[i - 1]) for i in range(1, 6)]
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)
    # Each round of the worker loop can only find the next task of the chain.
    assert work(svc) == 6
    assert calls(key) == dict.fromkeys(ids, 1)
    assert run_of(svc, run).state == ExecState.SUCCEEDED


def test_failure_in_the_middle_marks_downstream_upstream_failed_and_fails_the_run(
    svc: Services,
) -> None:
    key = "middle"
    fail(key, "b")
    tasks = [
        task(key, "a"),
        task(key, "b", "a"),
        task(key, "c", "a"),
        task(key, "d", "b"),
        task(key, "e", "d", "c"),
        task(key, "f", "c"),
    ]
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)
    work(svc)
    assert calls(key) == {"a": 1, "b": 1, "c": 1, "f": 1}
    assert states(svc, run) == {
        "a": "succeeded",
        "b": "failed",
        "c": "succeeded",
        "d": "upstream_failed",
        "e": "upstream_failed",
        "f": "succeeded",
    }
    ended = run_of(svc, run)
    assert ended.state == ExecState.FAILED
    assert ended.error == "3 of 6 tasks did not succeed: b, d, e"


def test_all_done_runs_after_a_failed_upstream(svc: Services) -> None:
    key = "all-done"
    fail(key, "a")
    tasks = [task(key, "a"), task(key, "cleanup", "a", trigger_rule="all_done")]
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)
    work(svc)
    assert calls(key) == {"a": 1, "cleanup": 1}
    assert states(svc, run) == {"a": "failed", "cleanup": "succeeded"}
    assert run_of(svc, run).state == ExecState.FAILED


def test_retry_reruns_only_failed_and_not_run_tasks(svc: Services, clock: ManualClock) -> None:
    key = "retry"
    fail(key, "b")
    tasks = [
        task(key, "a"),
        task(key, "b", "a"),
        task(key, "c", "a"),
        task(key, "d", "b", "c"),
    ]
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)
    work(svc)
    assert run_of(svc, run).state == ExecState.FAILED
    assert calls(key) == {"a": 1, "b": 1, "c": 1}
    heal(key)
    retried = engine(svc).retry(TENANT, run.execution_id, clock.now())
    assert retried.state == ExecState.RUNNING
    assert retried.run_gen == 1
    work(svc)
    # a and c ran once in all; b twice (failed, then re-run); d once, after the re-run.
    assert calls(key) == {"a": 1, "b": 2, "c": 1, "d": 1}
    ended = run_of(svc, run)
    assert ended.state == ExecState.SUCCEEDED
    assert ended.error is None
    view = engine(svc).view(TENANT, run.execution_id)
    generations = {t.task_id: [e.run_gen for e in view.executions[t.task_id]] for t in view.tasks}
    assert generations == {"a": [0], "b": [0, 1], "c": [0], "d": [1]}


def test_retry_of_a_run_that_did_not_fail_is_refused(svc: Services, clock: ManualClock) -> None:
    key = "retry-refused"
    run = fire(svc, store_workflow(svc, [task(key, "a")], NOON, DUE), DUE)
    with pytest.raises(RunStateError, match="running"):
        engine(svc).retry(TENANT, run.execution_id, clock.now())
    work(svc)
    with pytest.raises(RunStateError, match="succeeded"):
        engine(svc).retry(TENANT, run.execution_id, clock.now())
    assert calls(key) == {"a": 1}


def test_overlap_skip_holds_the_slot_until_the_run_ends(svc: Services, clock: ManualClock) -> None:
    key = "overlap"
    tasks = [task(key, "a"), task(key, "b", "a")]
    job = store_workflow(svc, tasks, NOON, DUE, interval="1m", overlap="skip")
    first = fire(svc, job, DUE)
    later = DUE + timedelta(minutes=1)
    clock.set(later)
    second = fire(svc, svc.jobs.get(TENANT, job.job_id), later)
    assert second.state == ExecState.SKIPPED
    assert second.reason == "overlap=skip"
    work(svc)
    assert run_of(svc, first).state == ExecState.SUCCEEDED
    assert svc.jobs.get(TENANT, job.job_id).active_execution is None
    third_at = DUE + timedelta(minutes=2)
    clock.set(third_at)
    third = fire(svc, svc.jobs.get(TENANT, job.job_id), third_at)
    assert third.state == ExecState.RUNNING
    assert calls(key) == {"a": 1, "b": 1}


# When each `wf.when` task was called, by the test's clock (the handler cannot see the clock).
CALLED_AT: dict[str, datetime] = {}
CLOCKS: list[ManualClock] = []


@handler("wf.when")
def note_when(args: TaskArgs, ctx: Context) -> None:
    CALLED_AT[args.task] = CLOCKS[-1].now()


def test_a_workflow_run_claimed_ahead_calls_its_first_task_no_earlier_than_its_time(
    svc: Services, clock: ManualClock
) -> None:
    CLOCKS.append(clock)
    claimed_at = DUE - timedelta(milliseconds=900)
    clock.set(claimed_at)
    root = TaskSpec(id="root", target="handler:wf.when", payload={"key": "early", "task": "root"})
    run = fire(svc, store_workflow(svc, [root], NOON, DUE), claimed_at)
    assert run.state == ExecState.RUNNING
    assert run.started_at == DUE, "invariant 5: a run claimed ahead begins at its time"
    assert run.lag_ms == 0, f"a run claimed ahead shows no negative lag, not {run.lag_ms} ms"

    def hold(seconds: float) -> None:
        """The worker's waits move the test's clock: a worker holding the message until its
        time sleeps the 0.9 s left, one that does not calls the task at the claim's instant."""
        clock.advance(seconds)

    runner = ExecutionRunner(
        RunnerSettings.of(svc.settings),
        svc.jobs,
        svc.executions,
        svc.lanes,
        svc.targets,
        clock,
        sleep=hold,
        monotonic=clock.monotonic,
    )
    (message,) = drain(svc)
    runner.process(message)
    assert CALLED_AT["root"] >= DUE, (
        "invariant 5 (docs/RELIABILITY.md): a run claimed ahead starts no earlier than its time, "
        f"but its first task was called at {CALLED_AT['root']} for the run due at {DUE}"
    )
    assert run_of(svc, run).state == ExecState.SUCCEEDED
