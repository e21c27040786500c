"""What follows an execution's terminal write, and `overlap: queue`.

When a job's running execution ends, the oldest queued one starts. The worker (and a cancel)
calls this right after a terminal write; the watchdog calls it for queued executions it finds, so
a worker that dies between the two steps delays the next run by at most one watchdog interval,
and never loses it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from takt.config import Settings
from takt.dispatch.lanes import LaneSender, Outgoing
from takt.models.ids import to_ms
from takt.models.records import ExecState, ExecutionRecord
from takt.store.errors import ConflictError, NotFoundError
from takt.store.executions import ExecutionStore, Transition
from takt.store.jobs import JobStore


def after_terminal(
    jobs: JobStore,
    executions: ExecutionStore,
    lanes: LaneSender,
    settings: Settings,
    record: ExecutionRecord,
    state: ExecState,
    now: datetime,
) -> None:
    """Note the outcome on the job, free its overlap slot, and start its next queued run.

    A workflow task's execution advances its run instead: the run, not the task, holds the slot.
    """
    if record.run_id is not None:
        # Imported here: the engine itself calls after_terminal when a run ends.
        from takt.workflows.engine import RunEngine

        RunEngine(settings, jobs, executions, lanes).task_ended(record, state, now)
        return
    jobs.record_outcome(record.tenant_id, record.job_id, record.execution_id, state.value, now)
    if record.overlap != "allow":
        jobs.release_slot(record.tenant_id, record.job_id, record.execution_id)
    if record.overlap == "queue":
        release_queued(jobs, executions, lanes, settings, record.tenant_id, record.job_id, now)


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
