"""The execution lifecycle: every change of an execution's state, and what follows an end.

`Lifecycle` is the one object the engines (the claimer, the worker, the watchdog, the API, a
backfill, a workflow run) call to move an execution: each operation is named for what it does,
its conditional write is `ExecutionStore.transition`, and its rules are in
`takt.executions.rules`. It also builds the two engines that act when an execution ends, the
workflow `RunEngine` and the `Backfiller`, handing each itself as the lifecycle they call back:
they import nothing from here, so the dependency runs one way (docs/ARCHITECTURE.md).

What follows an execution's terminal write (`ended`): the job's outcome, its overlap slot, its
oldest `overlap: queue` execution started (`promote`), a backfill's next occurrences, or, for a
workflow task, its run's progress. The worker (and a cancel) calls it right after the terminal
write; the watchdog promotes queued executions it finds, so a worker that dies between the two
steps delays the next run by at most one watchdog interval, and never loses it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from takt.backfill.engine import Backfiller
from takt.config import Settings
from takt.executions import rules
from takt.models.ids import format_time
from takt.models.lanes import Lanes, Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.store.backfills import BackfillStore
from takt.store.errors import ConflictError, NotFoundError
from takt.store.executions import ExecutionStore, Transition, lease_fence
from takt.store.jobs import JobStore, OutcomeNote
from takt.workflows.engine import RunEngine


class Incidents(Protocol):
    """What tells people about a job's runs going wrong (`takt.notify.notifier.Notifier`, over
    SNS, EventBridge or a webhook): declared here, so the lifecycle imports no adapter."""

    def noted(
        self,
        record: ExecutionRecord,
        state: ExecState,
        note: OutcomeNote,
        now: datetime,
        error: str | None = None,
    ) -> None: ...


class Lifecycle:
    """The named operations on executions, over the stores and lanes of one process.

    `notifier` opens and closes a job's incidents when an execution ends; only the ends that
    a worker or the watchdog writes notify (`ended(..., notify=True)`).
    """

    def __init__(
        self,
        settings: Settings,
        jobs: JobStore,
        executions: ExecutionStore,
        lanes: Lanes,
        *,
        notifier: Incidents | None = None,
    ) -> None:
        self._settings = settings
        self._jobs = jobs
        self._executions = executions
        self._lanes = lanes
        self._notifier = notifier
        self.runs = RunEngine(jobs, executions, lanes, self)
        self.backfills = Backfiller(
            jobs, executions, BackfillStore(executions.client, settings.tenants_table), self
        )

    def check_at(self, now: datetime, *, delay_sec: float = 0) -> int:
        """When the watchdog looks at an execution made runnable at `now` (`rules.check_at`)."""
        return rules.check_at(now, self._settings.pending_resend_after_sec, delay_sec=delay_sec)

    # Starting

    def dispatch(
        self, record: ExecutionRecord, now: datetime, job: JobRecord | None = None
    ) -> None:
        """Start a pending execution just created: a workflow run dispatches its root tasks,
        any other execution is sent to its lane."""
        if record.run_tasks is not None:
            self.runs.start(record, now, job)
        else:
            self._lanes.send([Outgoing.of(record)])

    def promote(self, tenant_id: str, job_id: str, now: datetime) -> str | None:
        """Start the job's oldest queued execution if its overlap slot is free; its id, or None
        when the slot is taken, nothing waits, or another writer promoted it first."""
        try:
            job = self._jobs.get(tenant_id, job_id)
        except NotFoundError:
            return None
        holder = job.active_execution
        if holder:
            try:
                if not self._executions.get(tenant_id, holder).state.terminal:
                    return None
            except NotFoundError:
                pass
        queued = self._executions.first_queued(tenant_id, job_id)
        if queued is None:
            return None
        if not self._jobs.take_slot(tenant_id, job_id, queued.execution_id, expected=holder):
            return None
        try:
            promoted = self._executions.transition(
                tenant_id,
                queued.execution_id,
                Transition(
                    expect={"state": ExecState.QUEUED, "attempt": queued.attempt},
                    set={"state": ExecState.PENDING, "check_at": self.check_at(now)},
                ),
            )
        except ConflictError:
            return None
        self.dispatch(promoted, now)
        return promoted.execution_id

    # Stopping

    def stop(self, record: ExecutionRecord, now: datetime, *, reason: str) -> ExecutionRecord:
        """Cancel `record`: at once if it waits, through its worker if it runs.

        A waiting execution (pending, queued, retry_wait) becomes cancelled now; its message, if
        one is in flight, then finds nothing to lease. A running one gets `cancel_requested`,
        which its worker reads at its next heartbeat and the watchdog reads if the worker died;
        both then complete it as cancelled. Both writes are conditional on the state read:
        ConflictError means it changed meanwhile, and the caller reads it again.
        """
        if record.state == ExecState.RUNNING:
            return self._executions.transition(
                record.tenant_id,
                record.execution_id,
                Transition(
                    expect=lease_fence(record), set={"cancel_requested": True, "reason": reason}
                ),
            )
        return self._executions.transition(
            record.tenant_id,
            record.execution_id,
            Transition(
                expect={"state": record.state, "attempt": record.attempt},
                set={
                    "state": ExecState.CANCELLED,
                    "finished_at": format_time(now),
                    "reason": reason,
                },
                remove=("open_shard", "check_at", "retry_at"),
            ),
        )

    def cancel(self, record: ExecutionRecord, now: datetime, *, reason: str) -> ExecutionRecord:
        """`stop`, and what follows an end when that cancelled it at once. The cancel API,
        `overlap: replace` and a cancelled backfill stop executions this one way."""
        stopped = self.stop(record, now, reason=reason)
        if stopped.state.terminal:
            self.ended(stopped, ExecState.CANCELLED, now)
        return stopped

    def skip(
        self, tenant_id: str, execution_id: str, attempt: int, now: datetime, *, reason: str
    ) -> ExecutionRecord:
        """Record a pending execution that must not run as skipped, with `reason`, and what
        follows an end. The worker skips an occurrence claimed ahead that an edit acknowledged
        before its due time decided against (`takt.worker.recheck`). ConflictError when it is
        no longer pending at `attempt` (another copy of its message got there first),
        NotFoundError when it is gone."""
        record = self._executions.transition(
            tenant_id,
            execution_id,
            Transition(
                expect={"state": ExecState.PENDING, "attempt": attempt},
                set={"state": ExecState.SKIPPED, "reason": reason, "finished_at": format_time(now)},
                remove=("open_shard", "check_at"),
            ),
        )
        self.ended(record, ExecState.SKIPPED, now)
        return record

    # After an end

    def ended(
        self,
        record: ExecutionRecord,
        state: ExecState,
        now: datetime,
        *,
        error: str | None = None,
        notify: bool = False,
    ) -> None:
        """Note the outcome on the job, free its overlap slot, start its next queued run, pump
        its backfill, and (with `notify` and a notifier) open or close the job's incidents,
        `error` being the execution's last.

        A workflow task's execution advances its run instead: the run, not the task, holds the
        slot, and the run's own end comes back here.
        """
        if record.run_id is not None:
            self.runs.task_ended(record, state, now)
            return
        note = self._jobs.record_outcome(
            record.tenant_id, record.job_id, record.execution_id, state.value, now
        )
        if record.overlap != "allow":
            self._jobs.release_slot(record.tenant_id, record.job_id, record.execution_id)
        if record.overlap == "queue":
            self.promote(record.tenant_id, record.job_id, now)
        if record.backfill_id is not None:
            self.backfills.pump(record.tenant_id, record.job_id, record.backfill_id, now)
        if notify and self._notifier is not None and note is not None:
            self._notifier.noted(record, state, note, now, error)
