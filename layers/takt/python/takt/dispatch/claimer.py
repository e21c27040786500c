"""A claimer: dispatches everything due in one (minute bucket, shard) partition of the due index.

The steps for a batch of due items, in this order, make a crash at any point harmless
(DESIGN invariants 1-3):

1. create each occurrence's execution under its deterministic id (`attribute_not_exists`);
2. send the pending executions to their lanes (a resend after a crash is a duplicate message,
   which the worker's lease condition absorbs);
3. index the job at its next occurrence (before the job points there, so it is never unindexed);
4. advance the job, conditional on it still pointing at the fired occurrence;
5. delete the fired due item.

A crash before step 4 leaves the due item and the job as they were, so the next tick (one second
later) redoes the batch and finds steps 1-3 already done. A crash after step 4 leaves a stale due
item, which a later claim deletes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from botocore.exceptions import ClientError

from takt.config import Settings
from takt.dispatch.lanes import LaneSender, Outgoing
from takt.dispatch.plan import FiringPlan, plan_firing
from takt.models.ids import execution_id, to_ms
from takt.models.records import ExecState, ExecutionRecord, JobRecord, JobStatus
from takt.observability import logger
from takt.store.due import DueItem, DueStore
from takt.store.errors import NotFoundError, is_condition_failure
from takt.store.executions import ExecutionStore
from takt.store.jobs import JobStore


@dataclass
class ClaimResult:
    due: int = 0
    dispatched: int = 0
    skipped: int = 0
    stale: int = 0
    left: int = 0
    lags_ms: list[int] = field(default_factory=list)


@dataclass
class _Firing:
    item: DueItem
    job: JobRecord
    plan: FiringPlan
    run_ids: list[str] = field(default_factory=list)
    holder: str | None = None


class Claimer:
    def __init__(
        self,
        settings: Settings,
        jobs: JobStore,
        due: DueStore,
        executions: ExecutionStore,
        lanes: LaneSender,
    ) -> None:
        self._settings = settings
        self._jobs = jobs
        self._due = due
        self._executions = executions
        self._lanes = lanes

    def claim(self, minute: datetime, shard: int, now: datetime) -> ClaimResult:
        result = ClaimResult()
        ahead = timedelta(seconds=self._settings.dispatch_ahead_sec)
        items = self._due.query_due(minute, shard, now + ahead)
        result.due = len(items)
        if not items:
            return result
        jobs = self._jobs.batch_get([(i.tenant_id, i.job_id) for i in items])
        grace_ms = int(self._settings.due_grace_sec * 1000)
        firings: list[_Firing] = []
        for item in items:
            job = jobs.get((item.tenant_id, item.job_id))
            if job is not None and job.status == JobStatus.ACTIVE and job.next_run_time == item.due:
                plan = self._plan(job, item.due, now)
                if plan is None:
                    result.left += 1
                else:
                    firings.append(_Firing(item, job, plan))
            elif to_ms(now) - item.written_ms >= grace_ms:
                self._delete_stale(item)
                result.stale += 1
            else:
                # Young and not matching: a create or update may still be writing its job.
                result.left += 1

        outgoing: list[Outgoing] = []
        for firing in firings:
            outgoing.extend(self._create_executions(firing, now, result))
        if outgoing:
            self._lanes.send(outgoing)
            result.dispatched += len(outgoing)
            result.lags_ms.extend(
                max(0, to_ms(now) - to_ms(f.item.due)) for f in firings if f.run_ids
            )
        for firing in firings:
            if firing.plan.next_run is not None:
                self._due.put(firing.job.tenant_id, firing.job.job_id, firing.plan.next_run, now)
        for firing in firings:
            self._jobs.advance(
                firing.job, firing.item.due, firing.plan.next_run, active_execution=firing.holder
            )
            self._delete_stale(firing.item)
        return result

    @staticmethod
    def _plan(job: JobRecord, due: datetime, now: datetime) -> FiringPlan | None:
        """The job's firing plan, or None when its stored schedule cannot be evaluated.

        One such job must not stop its whole partition (the claim would fail on every tick and
        nothing else in it would ever be dispatched): it is logged and its due item left in
        place, where a corrected definition supersedes it, and the other jobs go on.
        """
        try:
            return plan_firing(job, due, now)
        except ValueError:  # ScheduleError is a ValueError
            logger.exception("due job cannot be planned", job_id=job.job_id)
            return None

    def _create_executions(
        self, firing: _Firing, now: datetime, result: ClaimResult
    ) -> list[Outgoing]:
        job, plan = firing.job, firing.plan
        for scheduled, reason in plan.skipped:
            self._create(job, scheduled, now, ExecState.SKIPPED, reason)
            result.skipped += 1
        busy = self._slot_busy(job)
        outgoing = []
        for index, scheduled in enumerate(plan.run):
            if busy and job.overlap == "skip":
                self._create(job, scheduled, now, ExecState.SKIPPED, "overlap=skip")
                result.skipped += 1
                continue
            queued = job.overlap == "queue" and (busy or index > 0)
            state = ExecState.QUEUED if queued else ExecState.PENDING
            record = self._create(job, scheduled, now, state, None)
            if job.overlap == "skip":
                busy = True
            firing.run_ids.append(record.execution_id)
            # Not only a pending record holds the slot: after a crashed try, a worker may already
            # be running the execution this retry found, and the next occurrence must see it busy.
            open_run = record.state != ExecState.QUEUED and not record.state.terminal
            if job.overlap != "allow" and open_run:
                firing.holder = record.execution_id
            if record.state == ExecState.PENDING:
                outgoing.append(Outgoing.of(record))
        return outgoing

    def _create(
        self,
        job: JobRecord,
        scheduled: datetime,
        now: datetime,
        state: ExecState,
        reason: str | None,
    ) -> ExecutionRecord:
        """Create (or find, after an earlier crashed try) the execution of one occurrence."""
        record = ExecutionRecord.for_job(
            job, execution_id(job.job_id, scheduled), scheduled, state, now, reason=reason
        )
        check_at = now + timedelta(seconds=self._settings.pending_resend_after_sec)
        if self._executions.create(record, check_at_ms=to_ms(check_at)):
            logger.debug(
                "execution created",
                job_id=job.job_id,
                execution_id=record.execution_id,
                state=state.value,
            )
            return record
        existing = self._executions.get(job.tenant_id, record.execution_id)
        logger.debug(
            "execution already exists",
            job_id=job.job_id,
            execution_id=record.execution_id,
            state=existing.state.value,
        )
        return existing

    def _slot_busy(self, job: JobRecord) -> bool:
        """Whether the job's previous run (for overlap skip/queue) is still open."""
        if job.overlap == "allow" or not job.active_execution:
            return False
        try:
            holder = self._executions.get(job.tenant_id, job.active_execution)
        except NotFoundError:
            return False
        return not holder.state.terminal

    def _delete_stale(self, item: DueItem) -> None:
        try:
            self._due.delete_if_unchanged(item)
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
