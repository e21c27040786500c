"""Driving workflow runs in tests: registered task handlers that count their calls, a workflow
job stored as the API stores one, and a loop that feeds every lane message to the worker.

Each test keys its calls by a name of its own in the task payloads, so tests sharing the
process-wide handler registry never meet.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from takt.executions.lifecycle import Lifecycle
from takt.handlers import Context, PermanentError, handler
from takt.models.ids import execution_id, format_time
from takt.models.lanes import LaneMessage
from takt.models.records import (
    WORKFLOW_TARGET,
    ExecState,
    ExecutionRecord,
    JobRecord,
    RetryPolicy,
    TaskSpec,
)
from takt.store.due import minute_of, shard_of
from takt.store.errors import ConflictError
from takt.store.executions import Transition
from takt.wiring import Services
from takt.workflows.engine import RunEngine
from tests.support.jobs import TENANT, make_job, store_job
from tests.support.lanes import drain

_lock = threading.Lock()
CALLS: Counter[tuple[str, str]] = Counter()
FAILING: set[tuple[str, str]] = set()


class TaskArgs(BaseModel):
    key: str
    task: str


@handler("wf.task")
def run_task(args: TaskArgs, ctx: Context) -> None:
    """Counts the call; fails permanently while (key, task) is in FAILING."""
    with _lock:
        CALLS[(args.key, args.task)] += 1
        failing = (args.key, args.task) in FAILING
    if failing:
        raise PermanentError(f"task {args.task} told to fail")


def calls(key: str) -> dict[str, int]:
    with _lock:
        return {task: n for (k, task), n in CALLS.items() if k == key}


def fail(key: str, *tasks: str) -> None:
    with _lock:
        FAILING.update((key, t) for t in tasks)


def heal(key: str) -> None:
    with _lock:
        FAILING.difference_update({f for f in FAILING if f[0] == key})


def task(key: str, task_id: str, *depends_on: str, **fields: Any) -> TaskSpec:
    return TaskSpec(
        id=task_id,
        target="handler:wf.task",
        payload={"key": key, "task": task_id},
        retry=fields.pop("retry", RetryPolicy(max_attempts=1)),
        depends_on=list(depends_on),
        **fields,
    )


def store_workflow(
    svc: Services, tasks: list[TaskSpec], now: datetime, due: datetime, **fields: Any
) -> JobRecord:
    job = make_job(now=now, next_run_time=due, target=WORKFLOW_TARGET, tasks=tasks, **fields)
    return store_job(svc, job, now)


def fire(svc: Services, job: JobRecord, now: datetime) -> ExecutionRecord:
    """Claim the job's partition at `now` (its due time) and return its run."""
    due = job.next_run_time
    assert due is not None
    shard = shard_of(job.tenant_id, job.job_id, svc.settings.due_shards)
    svc.claimer.claim(minute_of(due), shard, now)
    return svc.executions.get(job.tenant_id, execution_id(job.job_id, due))


def work(svc: Services, *, rounds: int = 100) -> int:
    """Feed every lane message to the worker until the lanes stay empty; messages handled."""
    handled = 0
    for _ in range(rounds):
        messages = drain(svc)
        if not messages:
            return handled
        for message in messages:
            svc.runner.process(message)
        handled += len(messages)
    raise AssertionError(f"lanes still busy after {rounds} rounds")


def complete(svc: Services, *, threads: int = 8, rounds: int = 20) -> Counter[str]:
    """Finish every task execution whose message arrives as the worker would (succeeded, then
    the terminal hook), without calling a target: the wide tests' fast worker. Returns how many
    times each execution was finished (a duplicate message finds it finished and counts 0)."""
    finished: Counter[str] = Counter()

    def finish(message: LaneMessage) -> None:
        now = svc.clock.now()
        try:
            record = svc.executions.transition(
                message.tenant_id,
                message.execution_id,
                Transition(
                    expect={"state": ExecState.PENDING, "attempt": message.attempt},
                    set={"state": ExecState.SUCCEEDED, "finished_at": format_time(now)},
                    remove=("open_shard", "check_at"),
                ),
            )
        except ConflictError:
            return
        with _lock:
            finished[record.execution_id] += 1
        lifecycle(svc).ended(record, ExecState.SUCCEEDED, now)

    with ThreadPoolExecutor(threads) as pool:
        for _ in range(rounds):
            messages = drain(svc)
            if not messages:
                return finished
            list(pool.map(finish, messages))
    raise AssertionError(f"lanes still busy after {rounds} rounds")


def lifecycle(svc: Services) -> Lifecycle:
    return Lifecycle(svc.settings, svc.jobs, svc.executions, svc.lanes)


def engine(svc: Services) -> RunEngine:
    return lifecycle(svc).runs


def states(svc: Services, run: ExecutionRecord) -> dict[str, str]:
    """Task id -> its state in the run, as the API shows it."""
    view = engine(svc).view(run.tenant_id, run.execution_id)
    return {t.task_id: view.task_state(t) for t in view.tasks}


def run_of(svc: Services, run: ExecutionRecord) -> ExecutionRecord:
    return svc.executions.get(TENANT, run.execution_id)


def later(now: datetime, seconds: float) -> datetime:
    return now + timedelta(seconds=seconds)
