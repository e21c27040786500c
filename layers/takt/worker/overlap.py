"""What follows an execution's terminal write (the job's outcome, its overlap slot, `overlap:
queue`, a backfill's next occurrences), and stopping an execution.

When a job's running execution ends, the oldest queued one starts. The worker (and a cancel)
calls this right after a terminal write; the watchdog calls it for queued executions it finds, so
a worker that dies between the two steps delays the next run by at most one watchdog interval,
and never loses it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from takt.config import Settings
from takt.dispatch.lanes import LaneSender
from takt.models.ids import format_time, to_ms
from takt.models.lanes import Outgoing
from takt.models.records import ExecState, ExecutionRecord
from takt.store.errors import ConflictError, NotFoundError
from takt.store.executions import ExecutionStore, Transition, lease_fence
from takt.store.jobs import JobStore

if TYPE_CHECKING:
    from takt.notify.notifier import Notifier


def after_terminal(
    jobs: JobStore,
    executions: ExecutionStore,
    lanes: LaneSender,
    settings: Settings,
    record: ExecutionRecord,
    state: ExecState,
    now: datetime,
    *,
    notifier: Notifier | None = None,
    error: str | None = None,
) -> None:
    """Note the outcome on the job, free its overlap slot, start its next queued run, and
    (with a `notifier`) open or close the job's incidents, `error` being the execution's last.

    A workflow task's execution advances its run instead: the run, not the task, holds the slot.
    """
    if record.run_id is not None:
        # Imported here: the engine itself calls after_terminal when a run ends.
        from takt.workflows.engine import RunEngine

        RunEngine(settings, jobs, executions, lanes).task_ended(record, state, now)
        return
    note = jobs.record_outcome(
        record.tenant_id, record.job_id, record.execution_id, state.value, now
    )
    if record.overlap != "allow":
        jobs.release_slot(record.tenant_id, record.job_id, record.execution_id)
    if record.overlap == "queue":
        release_queued(jobs, executions, lanes, settings, record.tenant_id, record.job_id, now)
    if record.backfill_id is not None:
        # A backfill's execution ended: its next occurrences may start (takt.backfill).
        from takt.backfill import Backfiller, BackfillStore

        store = BackfillStore(executions.client, settings.tenants_table)
        Backfiller(settings, jobs, executions, lanes, store).pump(
            record.tenant_id, record.job_id, record.backfill_id, now
        )
    if notifier is not None and note is not None:
        notifier.noted(record, state, note, now, error)


def release_queued(
    jobs: JobStore,
    executions: ExecutionStore,
    lanes: LaneSender,
    settings: Settings,
    tenant_id: str,
    job_id: str,
    now: datetime,
) -> str | None:
    """Start the job's oldest queued execution if its slot is free; returns its id."""
    try:
        job = jobs.get(tenant_id, job_id)
    except NotFoundError:
        return None
    holder = job.active_execution
    if holder:
        try:
            if not executions.get(tenant_id, holder).state.terminal:
                return None
        except NotFoundError:
            pass
    queued = executions.first_queued(tenant_id, job_id)
    if queued is None:
        return None
    if not jobs.take_slot(tenant_id, job_id, queued.execution_id, expected=holder):
        return None
    check_at = now + timedelta(seconds=settings.pending_resend_after_sec)
    try:
        promoted = executions.transition(
            tenant_id,
            queued.execution_id,
            Transition(
                expect={"state": ExecState.QUEUED, "attempt": queued.attempt},
                set={"state": ExecState.PENDING, "check_at": to_ms(check_at)},
            ),
        )
    except ConflictError:
        return None
    if promoted.run_tasks is not None:
        # Imported here for the same reason as in after_terminal.
        from takt.workflows.engine import RunEngine

        RunEngine(settings, jobs, executions, lanes).start(promoted, now)
    else:
        lanes.send([Outgoing.of(promoted)])
    return promoted.execution_id


def stop(
    executions: ExecutionStore, record: ExecutionRecord, now: datetime, *, reason: str
) -> ExecutionRecord:
    """Cancel `record`: at once if it waits, through its worker if it runs.

    A waiting execution (pending, queued, retry_wait) becomes cancelled now; its message, if one
    is in flight, then finds nothing to lease. A running one gets `cancel_requested`, which its
    worker reads at its next heartbeat and the watchdog reads if the worker died; both then
    complete it as cancelled. Both writes are conditional on the state read: ConflictError
    means it changed meanwhile, and the caller reads it again. The cancel API and
    `overlap: replace` stop executions this one way.
    """
    if record.state == ExecState.RUNNING:
        return executions.transition(
            record.tenant_id,
            record.execution_id,
            Transition(
                expect=lease_fence(record), set={"cancel_requested": True, "reason": reason}
            ),
        )
    return executions.transition(
        record.tenant_id,
        record.execution_id,
        Transition(
            expect={"state": record.state, "attempt": record.attempt},
            set={"state": ExecState.CANCELLED, "finished_at": format_time(now), "reason": reason},
            remove=("open_shard", "check_at", "retry_at"),
        ),
    )
