"""Workflow runs: starting one, advancing it on each task's end, the backstop, and re-runs.

A run is its occurrence's execution (created by the claimer like any other, so catch-up, overlap
and history need nothing new) with `run_tasks` set; it goes `pending` -> `running` (its task items
written and its root tasks dispatched) -> `succeeded` or `failed`, and holds the job's overlap slot
until then. A task runs as an ordinary execution (`<run id>~<task id>~<generation>`), leased,
retried and timed out by the workers as every execution is.

Readiness without polling: when a task's execution ends, its terminal hook

1. records the outcome on the task item (`end`, conditional on it still waiting in this
   generation): only the write that ends the task goes on, so nothing below is counted twice;
2. tells each downstream task (`hear`: its `waiting_on` counter down by one, `bad_up` up by one
   for a failure); the arrival that brings `waiting_on` to 0 decides it: `upstream_failed` under
   `all_success` when an upstream failed (and that outcome travels on, transitively), else its
   execution is created under its deterministic id (`attribute_not_exists`) and sent;
3. counts the tasks that ended on the run (`ended_count`); the write that reaches the number of
   tasks ends the run.

A function that dies between two of these leaves the run `running` in the sparse `open` index
with a `check_at`, which each step moves later: when the run makes no progress for
`pending_resend_after_sec`, the watchdog calls `check`, which re-derives every task's state from
its upstreams' and its execution's (the ground truth, not the counters), finishes what was left,
and ends the run when every task has ended: nothing is lost, and the deterministic ids and the
conditional writes keep anything from running twice.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from takt.models.ids import task_execution_id
from takt.models.lanes import Lanes, Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.observability import logger
from takt.parallel import FOREGROUND
from takt.store.errors import ConflictError, NotFoundError
from takt.store.ports import JobReader, RunExecutions
from takt.store.runs import SUCCEEDED, UPSTREAM_FAILED, RunRef, RunStore, TaskItem
from takt.workflows.model import downstream_of, topological_order

POOL_SIZE = 8
"""Threads for a wide step (1,000 downstream tasks): DynamoDB writes are I/O bound."""
CHUNK = POOL_SIZE * 10
"""Task executions a wide step creates and sends between two looks at the process's
foreground (`takt.parallel.FOREGROUND`): a chunk takes the pool's threads ten tasks each."""
GIVE_WAY_SEC = 1.0
"""The longest a chunk waits for the foreground: bulk work gives way, it never stops."""

T = TypeVar("T")
R = TypeVar("R")

_local = threading.local()


def _in_pool() -> None:
    _local.inside = True


def _each(fn: Callable[[T], R], items: list[T]) -> list[R]:
    """`fn` over `items`, on a small thread pool when there are several (never nested).

    Each call runs in a copy of the caller's context, so what it carries (the meter's current
    invocation, log keys) follows the work into the pool's threads.
    """
    if len(items) <= 1 or getattr(_local, "inside", False):
        return [fn(i) for i in items]
    context = contextvars.copy_context()
    with ThreadPoolExecutor(min(POOL_SIZE, len(items)), initializer=_in_pool) as pool:
        return list(pool.map(lambda item: context.copy().run(fn, item), items))


class RunStateError(Exception):
    """The run is not in a state that allows this (a retry of a run that has not failed)."""


@dataclass
class RunView:
    """A run as the API and CLI show it: its execution, its tasks and their executions."""

    run: ExecutionRecord
    tasks: list[TaskItem]
    executions: dict[str, list[ExecutionRecord]]

    def task_state(self, task: TaskItem) -> str:
        """A task's state: its outcome once ended, else its current execution's state, or
        `waiting` while it has none."""
        if task.ended:
            return task.state
        current = task_execution_id(self.run.execution_id, task.task_id, task.gen)
        for record in self.executions.get(task.task_id, []):
            if record.execution_id == current:
                return record.state.value
        return task.state


class RunLifecycle(Protocol):
    """What a run asks of the execution lifecycle (`takt.executions.lifecycle.Lifecycle`, which
    builds the `RunEngine` and hands itself in): declared here so this package imports nothing
    of the lifecycle that calls it back when a task's execution ends."""

    def check_at(self, now: datetime, *, delay_sec: float = 0) -> int: ...

    def start_run(self, run: ExecutionRecord, now: datetime, tasks: int) -> ExecutionRecord: ...

    def fail_run(self, run: ExecutionRecord, now: datetime, error: str) -> None: ...

    def finish_run(
        self, run: ExecutionRecord, gen: int, state: ExecState, error: str | None, now: datetime
    ) -> bool: ...

    def rerun_run(self, run: ExecutionRecord, gen: int, now: datetime) -> ExecutionRecord: ...


class RunEngine:
    def __init__(
        self,
        jobs: JobReader,
        executions: RunExecutions,
        lanes: Lanes,
        lifecycle: RunLifecycle,
    ) -> None:
        self._jobs = jobs
        self._executions = executions
        self._lanes = lanes
        self._lifecycle = lifecycle
        self.store = RunStore(executions.client, executions.table)

    # Starting

    def start(self, run: ExecutionRecord, now: datetime, job: JobRecord | None = None) -> None:
        """Start a pending run: mark it running, write its task items, dispatch its roots.

        Only the write that moves the run to `running` goes on; a start that dies after it is
        finished by `check` (missing task items are written then, conditionally).
        """
        if run.state != ExecState.PENDING:
            return
        if job is None:
            try:
                job = self._jobs.get(run.tenant_id, run.job_id)
            except NotFoundError:
                job = None
        tasks = job.tasks if job is not None else None
        if not tasks:
            self._fail_unstarted(run, now)
            return
        try:
            started = self._lifecycle.start_run(run, now, len(tasks))
        except ConflictError:
            return
        ref = RunRef(run.tenant_id, run.execution_id)
        downstream = downstream_of(tasks)
        expires = int(now.timestamp()) + self._executions.retention_sec
        self.store.put_all(
            [
                self.store.item(ref, task, i, downstream[task.id], expires)
                for i, task in enumerate(tasks)
            ]
        )
        roots = [
            TaskItem(task.id, i, task, downstream[task.id])
            for i, task in enumerate(tasks)
            if not task.depends_on
        ]
        logger.info("workflow run started", run_id=run.execution_id, tasks=len(tasks))
        self._dispatch(started, ref, roots, now)

    def _fail_unstarted(self, run: ExecutionRecord, now: datetime) -> None:
        """A run whose job was deleted (or is no longer a workflow) before it started."""
        self._lifecycle.fail_run(run, now, "its job was deleted or is no longer a workflow")

    def _dispatch(
        self, origin: ExecutionRecord, ref: RunRef, tasks: list[TaskItem], now: datetime
    ) -> None:
        """Create each task's execution (deterministic id) and send the pending ones, 10 a call.

        `origin` is the run's execution or one of its tasks': it gives the tenant, job, lane and
        trigger every task execution of the run shares.

        An execution that exists already (a redo) is sent again while still pending: a duplicate
        message finds nothing to lease. Its `check_at` lets the watchdog resend a lost message.

        A run claimed ahead of its time (`dispatch_ahead_sec`) starts no earlier than that time
        (docs/RELIABILITY.md, invariant 5): its root tasks are scheduled at the run's time, not
        at the claim's, so the worker holds their messages until then as it holds any message
        claimed ahead. Tasks made runnable later are scheduled when they became runnable.
        """
        at = max(now, origin.scheduled_time)
        check_at = self._lifecycle.check_at(now, delay_sec=(at - now).total_seconds())

        def create(task: TaskItem) -> Outgoing | None:
            record = self._task_record(origin, ref.run_id, task, at, now)
            if self._executions.create(record, check_at_ms=check_at):
                return Outgoing.of(record)
            existing = self._executions.get(ref.tenant_id, record.execution_id)
            return Outgoing.of(existing) if existing.state == ExecState.PENDING else None

        for first in range(0, len(tasks), CHUNK):
            if first:
                # Between chunks, a wide step gives way to the process's foreground (`takt
                # local`'s scheduler tick); deployed, nothing runs there: no wait at all.
                FOREGROUND.give_way(GIVE_WAY_SEC)
            outgoing = [o for o in _each(create, tasks[first : first + CHUNK]) if o is not None]
            batches = [outgoing[i : i + 10] for i in range(0, len(outgoing), 10)]
            _each(self._lanes.send, batches)

    @staticmethod
    def _task_record(
        origin: ExecutionRecord, run_id: str, task: TaskItem, at: datetime, now: datetime
    ) -> ExecutionRecord:
        spec = task.spec
        # Scheduled when it became runnable (`at`, never before its run's time): its lag is the
        # dispatch delay, not its upstreams' running time (which would swamp ScheduleLag).
        return ExecutionRecord(
            tenant_id=origin.tenant_id,
            job_id=origin.job_id,
            execution_id=task_execution_id(run_id, task.task_id, task.gen),
            scheduled_time=at,
            trigger=origin.trigger,
            state=ExecState.PENDING,
            max_attempts=spec.retry.max_attempts,
            lane=origin.lane,
            job_version=origin.job_version,
            target=spec.target,
            payload=spec.payload,
            timeout_sec=spec.timeout_sec,
            retry=spec.retry,
            run_id=run_id,
            task_id=task.task_id,
            run_gen=task.gen,
            created_at=now,
        )

    # Advancing

    def task_ended(self, record: ExecutionRecord, state: ExecState, now: datetime) -> None:
        """The terminal hook of a task's execution: record, tell downstream, maybe end the run."""
        if record.run_id is None or record.task_id is None:
            return
        ref = RunRef(record.tenant_id, record.run_id)
        gen = record.run_gen or 0
        item = self.store.end(ref, record.task_id, gen, state.value)
        if item is None:
            return  # recorded already (a redo), or an execution of an earlier generation
        # The task's execution carries what its siblings need (tenant, job, lane, trigger).
        ended = self._propagate(record, ref, [item], now)
        self._note(ref, gen, len(ended), now)

    def _propagate(
        self, origin: ExecutionRecord, ref: RunRef, sources: list[TaskItem], now: datetime
    ) -> list[str]:
        """Tell the downstream tasks of ended `sources`; dispatch those that became runnable.

        Returns the ids of the tasks that ended: the sources and every task marked
        `upstream_failed` on the way (level by level, so a long chain needs no recursion).
        """
        ended = [s.task_id for s in sources]
        arrivals = [(d, s.state == SUCCEEDED) for s in sources for d in s.downstream]
        runnable: list[TaskItem] = []
        while arrivals:
            decided = _each(lambda a: self._arrive(ref, *a), arrivals)
            arrivals = []
            for task in decided:
                if task is None:
                    continue
                if task.state == UPSTREAM_FAILED:
                    ended.append(task.task_id)
                    arrivals.extend((d, False) for d in task.downstream)
                else:
                    runnable.append(task)
        self._dispatch(origin, ref, runnable, now)
        return ended

    def _arrive(self, ref: RunRef, task_id: str, ok: bool) -> TaskItem | None:
        """Count one upstream's end; the task if this was its last upstream and decided it
        (`upstream_failed`, or still `waiting` meaning: run it), else None."""
        waiting_on = self.store.hear(ref, task_id, ok)
        if waiting_on is None or waiting_on > 0:
            return None
        task = self.store.task(ref, task_id)
        if task.spec.trigger_rule == "all_success" and task.bad_up:
            if not self.store.skip(ref, task_id):
                return None
            task.state = UPSTREAM_FAILED
        return task

    def _note(self, ref: RunRef, gen: int, ended: int, now: datetime) -> None:
        noted = self.store.note_ended(ref, gen, ended, self._lifecycle.check_at(now))
        if noted is None:
            return
        count, run = noted
        if count >= (run.run_tasks or 0):
            self._finish(run, gen, now)

    def _finish(self, run: ExecutionRecord, gen: int, now: datetime) -> None:
        """End the run if every task has ended: succeeded when all succeeded, else failed."""
        ref = RunRef(run.tenant_id, run.execution_id)
        tasks = self.store.tasks(ref)
        if len(tasks) < (run.run_tasks or 0) or not all(t.ended for t in tasks):
            return
        bad = [t.task_id for t in tasks if t.state != SUCCEEDED]
        state = ExecState.FAILED if bad else ExecState.SUCCEEDED
        error = None
        if bad:
            shown = ", ".join(bad[:5]) + (", ..." if len(bad) > 5 else "")
            error = f"{len(bad)} of {len(tasks)} tasks did not succeed: {shown}"
        if self._lifecycle.finish_run(run, gen, state, error, now):
            logger.info("workflow run ended", run_id=run.execution_id, state=state.value)

    # The backstop

    def check(self, run: ExecutionRecord, now: datetime) -> None:
        """Re-evaluate an open run from its task states and finish whatever was left undone.

        Called by the watchdog when the run's `check_at` has passed: a start, a completion or a
        retry that died midway leaves exactly such a run.
        """
        if run.state == ExecState.PENDING:
            self.start(run, now)
            return
        if run.state != ExecState.RUNNING:
            return
        ref = RunRef(run.tenant_id, run.execution_id)
        gen = run.run_gen or 0
        tasks = self._complete_items(run, self.store.tasks(ref), now)
        by_id = {t.task_id: t for t in tasks}
        for task in tasks:
            if task.gen < gen and task.state != SUCCEEDED:
                self._reset(ref, task, gen, by_id)
        executions = {e.execution_id: e for e in self.store.executions(ref)}
        ended = 0
        runnable: list[TaskItem] = []
        for task_id in topological_order([t.spec for t in tasks]):
            task = by_id[task_id]
            if not task.ended and self._recheck(ref, task, by_id, executions, runnable):
                ended += 1
        self._dispatch(run, ref, runnable, now)
        self._note(ref, gen, ended, now)
        if all(t.ended for t in tasks):
            # The counter may have missed a task whose hook died: the states decide.
            self._finish(run, gen, now)

    def _recheck(
        self,
        ref: RunRef,
        task: TaskItem,
        by_id: dict[str, TaskItem],
        executions: dict[str, ExecutionRecord],
        runnable: list[TaskItem],
    ) -> bool:
        """Decide a waiting task from its upstreams' states and its own execution; True when
        this ended it (so it is counted once)."""
        upstream = [by_id[d] for d in task.spec.depends_on]
        if not all(u.ended for u in upstream):
            return False
        if task.spec.trigger_rule == "all_success" and any(u.state != SUCCEEDED for u in upstream):
            if self.store.skip(ref, task.task_id):
                task.state = UPSTREAM_FAILED
                return True
            return False
        execution = executions.get(task_execution_id(ref.run_id, task.task_id, task.gen))
        if execution is None:
            runnable.append(task)
        elif execution.state.terminal:
            written = self.store.end(ref, task.task_id, task.gen, execution.state.value)
            if written is not None:
                task.state = written.state
                return True
        return False

    def _complete_items(
        self, run: ExecutionRecord, tasks: list[TaskItem], now: datetime
    ) -> list[TaskItem]:
        """The run's task items, writing those a start that died midway did not write."""
        if len(tasks) >= (run.run_tasks or 0):
            return tasks
        try:
            specs = self._jobs.get(run.tenant_id, run.job_id).tasks or []
        except NotFoundError:
            specs = []
        ref = RunRef(run.tenant_id, run.execution_id)
        downstream = downstream_of(specs)
        expires = int(now.timestamp()) + self._executions.retention_sec
        have = {t.task_id for t in tasks}
        missing = [
            self.store.item(ref, spec, i, downstream[spec.id], expires)
            for i, spec in enumerate(specs)
            if spec.id not in have
        ]
        _each(self.store.put_missing, missing)
        return self.store.tasks(ref)

    # Re-running

    def retry(self, tenant_id: str, run_id: str, now: datetime) -> ExecutionRecord:
        """Re-run the failed, dead, cancelled and not-run tasks of a failed run.

        The run becomes `running` in its next generation; those tasks wait again (having heard
        of their upstreams that succeeded), and the ones with nothing left to wait for get new
        executions (`...~<generation>`). Tasks that succeeded keep their result.
        """
        run = self._executions.get(tenant_id, run_id)
        if run.run_tasks is None:
            raise NotFoundError(run_id)
        if run.state != ExecState.FAILED or run.run_gen is None:
            raise RunStateError(
                f"run {run_id} is {run.state.value}; only a failed run that started can be retried"
            )
        gen = run.run_gen + 1
        try:
            updated = self._lifecycle.rerun_run(run, gen, now)
        except ConflictError:
            raise RunStateError(f"run {run_id} changed meanwhile") from None
        ref = RunRef(tenant_id, run_id)
        tasks = self.store.tasks(ref)
        by_id = {t.task_id: t for t in tasks}
        redo = [t for t in tasks if t.state != SUCCEEDED]
        _each(lambda t: self._reset(ref, t, gen, by_id), redo)
        self._note(ref, gen, len(tasks) - len(redo), now)
        ready = [t for t in redo if t.waiting_on == 0]
        self._dispatch(updated, ref, ready, now)
        return updated

    def _reset(self, ref: RunRef, task: TaskItem, gen: int, by_id: dict[str, TaskItem]) -> None:
        """Make a task wait again in generation `gen`, for its upstreams that will run again."""
        waiting_on = sum(1 for d in task.spec.depends_on if by_id[d].state != SUCCEEDED)
        self.store.reset(ref, task, gen, waiting_on)
        task.state, task.gen, task.waiting_on, task.bad_up = "waiting", gen, waiting_on, 0

    # Reading

    def view(self, tenant_id: str, run_id: str) -> RunView:
        """A run with its tasks and their executions; NotFoundError unless it is a run."""
        run = self._executions.get(tenant_id, run_id)
        if run.run_tasks is None:
            raise NotFoundError(run_id)
        ref = RunRef(tenant_id, run_id)
        by_task: dict[str, list[ExecutionRecord]] = {}
        for record in sorted(self.store.executions(ref), key=lambda r: r.run_gen or 0):
            by_task.setdefault(record.task_id or "", []).append(record)
        return RunView(run, self.store.tasks(ref), by_task)
