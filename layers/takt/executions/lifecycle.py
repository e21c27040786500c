"""The execution lifecycle: every change of an execution's state, and what follows an end.

`Lifecycle` is the one object the engines (the claimer, the worker, the watchdog, the API, a
backfill, a workflow run) call to move an execution. Each operation is named for what it does;
the rules that decide it are in `takt.executions.rules`, and its one conditional write goes
through `ExecutionStore.transition` (the store turns it into an expression). The state diagram,
with who calls each operation, is in docs/ARCHITECTURE.md ("The execution lifecycle").

Every write is fenced (DESIGN invariant 4): by the (state, attempt) the caller read, and for a
lease holder by its lease token too, so a stale actor's write fails with ConflictError instead of
applying. A lease holder's report that lost its lease is *fenced*: the operation returns False or
None and applies nothing.

What follows an execution's terminal write (`ended`): the job's outcome, its overlap slot, its
oldest `overlap: queue` execution started (`promote`), a backfill's next occurrences, or, for a
workflow task, its run's progress. The worker (and a cancel) calls it right after the terminal
write; the watchdog promotes queued executions it finds, so a worker that dies between the two
steps delays the next run by at most one watchdog interval, and never loses it.

It also builds the two engines that act when an execution ends, the workflow `RunEngine` and the
`Backfiller`, handing each itself as the lifecycle they call back through a port of their own:
they import nothing from here, so the dependency runs one way (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, Protocol

from takt.backfill.engine import Backfiller
from takt.executions import rules
from takt.models.ids import format_time, to_ms
from takt.models.lanes import LaneMessage, Lanes, Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.occurrences import overlap_rule
from takt.store.backfills import BackfillStore
from takt.store.errors import ConflictError, ExecutionConflictError, NotFoundError
from takt.store.executions import lease_fence, open_shard_of
from takt.store.items import execution_snapshot
from takt.store.ports import LifecycleExecutions, LifecycleJobs, OutcomeNote, Transition
from takt.workflows.engine import RunEngine


class Incidents(Protocol):
    """What tells people about a job's runs going wrong (`takt.notify.notifier.Notifier`, over
    SNS, EventBridge or a webhook): declared here, so the lifecycle imports no adapter."""

    def notify_state(
        self,
        record: ExecutionRecord,
        state: ExecState,
        note: OutcomeNote,
        now: datetime,
        error: str | None = None,
    ) -> None: ...


OPEN_ATTRS = ("open_shard", "check_at")
"""What puts an execution in the watchdog's sparse `open` index; a terminal write removes it."""
LEASE_ATTRS = ("lease_token", "lease_expires_at")
UNLESS_CANCEL_REQUESTED = ("cancel_requested",)
"""The `expect_absent` of a write that would retry an execution: a cancel asked for after the
writer's read makes it fail, so the cancel wins."""


def _not_yet_leased(message: LaneMessage) -> dict[str, Any]:
    """The condition of a write to `message`'s attempt before any worker leased it: pending or
    waiting to retry, at that attempt (a stale copy of an earlier attempt changes nothing)."""
    return {"state": (ExecState.PENDING, ExecState.RETRY_WAIT), "attempt": message.attempt}


class LifecycleSettings(Protocol):
    """What the lifecycle reads of the settings: `Settings`, or the slice of the component that
    builds it (each slice names these fields too)."""

    @property
    def lease_sec(self) -> float: ...

    @property
    def pending_resend_after_sec(self) -> float: ...

    @property
    def tenants_table(self) -> str: ...


class Lifecycle:
    """The named operations on executions, over the stores and lanes of one process.

    `notifier` opens and closes a job's incidents when an execution ends; only the ends that a
    worker or the watchdog writes notify (`ended(..., notify=True)`).
    """

    def __init__(
        self,
        settings: LifecycleSettings,
        jobs: LifecycleJobs,
        executions: LifecycleExecutions,
        lanes: Lanes,
        *,
        notifier: Incidents | None = None,
    ) -> None:
        self._settings = settings
        self._jobs = jobs
        self._executions = executions
        self._lanes = lanes
        self._notifier = notifier

    @cached_property
    def runs(self) -> RunEngine:
        """The workflow engine: a run's start, its progress at each task's end, its backstop."""
        return RunEngine(self._jobs, self._executions, self._lanes, self)

    @cached_property
    def backfills(self) -> Backfiller:
        """The backfill engine: each backfill execution's end starts its next occurrences."""
        store = BackfillStore(self._executions.client, self._settings.tenants_table)
        return Backfiller(self._jobs, self._executions, store, self)

    def check_at(self, now: datetime, *, delay_sec: float = 0) -> int:
        """When the watchdog looks at an execution made runnable at `now` (`rules.check_at`)."""
        return rules.check_at(now, self._settings.pending_resend_after_sec, delay_sec=delay_sec)

    def _send(
        self, record: ExecutionRecord, attempt: int | None = None, delay_sec: int = 0
    ) -> None:
        self._lanes.send([Outgoing.of(record, attempt, delay_sec)])

    def _write(self, record: ExecutionRecord, change: Transition) -> ExecutionRecord:
        return self._executions.transition(record.tenant_id, record.execution_id, change)

    # Starting: the claimer, the API and a backfill create executions; these start them.

    def dispatch(
        self, record: ExecutionRecord, now: datetime, job: JobRecord | None = None
    ) -> None:
        """Start a pending execution just created: a workflow run dispatches its root tasks,
        any other execution is sent to its lane."""
        if record.run_tasks is not None:
            self.runs.start(record, now, job)
        else:
            self._send(record)

    def promote(self, tenant_id: str, job_id: str, now: datetime) -> str | None:
        """Start the job's oldest queued execution if its overlap slot is free: queued ->
        pending. Its id, or None when the slot is taken, nothing waits, or another writer
        promoted it first."""
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
            promoted = self._write(
                queued,
                Transition(
                    expect={"state": ExecState.QUEUED, "attempt": queued.attempt},
                    set={"state": ExecState.PENDING, "check_at": self.check_at(now)},
                ),
            )
        except ConflictError:
            return None
        self.dispatch(promoted, now)
        return promoted.execution_id

    # The worker: lease, heartbeat, and one of complete, retry, give_back (all lease-fenced).

    def requeue(
        self,
        message: LaneMessage,
        delay_sec: int,
        now: datetime,
        *,
        unserved_since: datetime | None = None,
    ) -> ExecutionRecord:
        """Send a not-yet-leased execution back to its lane as a fresh copy of its message,
        `delay_sec` from now (a worker that does not serve it, or may not start it yet); the
        copy carries `unserved_since` when given (`LaneMessage.unserved_since`).

        The check time moves past the copy's arrival first, so the watchdog does not add a
        second message while this one circles, and a fresh copy, unlike a returned message,
        never reaches the dead-letter queue by being received too often. ConflictError when the
        message is stale (the execution moved on), NotFoundError when there is no execution.
        """
        record = self._executions.transition(
            message.tenant_id,
            message.execution_id,
            Transition(
                expect=_not_yet_leased(message),
                set={"check_at": self.check_at(now, delay_sec=delay_sec)},
            ),
        )
        copy = Outgoing.of(record, message.attempt, delay_sec)
        if unserved_since is not None:
            copy = replace(
                copy, message=copy.message.model_copy(update={"unserved_since": unserved_since})
            )
        self._lanes.send([copy])
        return record

    def fail_unserved(self, message: LaneMessage, now: datetime, error: str) -> ExecutionRecord:
        """A not-yet-leased attempt whose handler no worker served for the deployment's limit:
        -> failed with `error`, and what follows an end (no attempt was used, and another one
        cannot help until a worker serves the handler; a re-run retries it then).
        ConflictError/NotFoundError as for `requeue`."""
        record = self._executions.transition(
            message.tenant_id,
            message.execution_id,
            Transition(
                expect=_not_yet_leased(message),
                set={"state": ExecState.FAILED, "error": error, "finished_at": format_time(now)},
                remove=OPEN_ATTRS,
            ),
        )
        self.ended(record, ExecState.FAILED, now, error=error, notify=True)
        return record

    def _lease_check_at(self, expires_ms: int) -> dict[str, int]:
        """What a lease or heartbeat writes to `check_at` (`rules.lease_moves_check_at`)."""
        moves = rules.lease_moves_check_at(
            self._settings.lease_sec, self._settings.pending_resend_after_sec
        )
        return {"check_at": expires_ms} if moves else {}

    def lease(
        self,
        message: LaneMessage,
        worker_id: str,
        now: datetime,
        *,
        job: JobRecord | None = None,
    ) -> ExecutionRecord:
        """Take the lease of the message's execution: pending or retry_wait at the message's
        attempt -> running under a fresh lease token. With `job` (edited since the claim, and
        still firing at this occurrence), the lease also takes the job's current snapshot of
        what to run. ConflictError for a duplicate or stale message, NotFoundError when there
        is no execution."""
        expires = to_ms(now + timedelta(seconds=self._settings.lease_sec))
        token = uuid.uuid4().hex
        try:
            return self._executions.transition(
                message.tenant_id,
                message.execution_id,
                Transition(
                    expect={
                        "state": (ExecState.PENDING, ExecState.RETRY_WAIT),
                        "attempt": message.attempt,
                    },
                    set={
                        "state": ExecState.RUNNING,
                        "lease_token": token,
                        "worker_id": worker_id,
                        "lease_expires_at": expires,
                        "started_at": format_time(now),
                        **self._lease_check_at(expires),
                        **(execution_snapshot(job) if job is not None else {}),
                    },
                    # The schedule lag is measured at the first start only.
                    set_if_absent={"lag_ms": to_ms(now) - to_ms(message.scheduled_time)},
                ),
            )
        except ExecutionConflictError as exc:
            # The SDK retried a lease whose answer was lost and met its own first write: the
            # lease is ours. Without this the call waits for the lease to expire and costs an
            # attempt (the last one: dead without ever running).
            if exc.current.lease_token == token:
                return exc.current
            raise

    def lease_unrecorded(
        self, message: LaneMessage, job: JobRecord, worker_id: str, now: datetime
    ) -> ExecutionRecord:
        """Take the lease of an occurrence its claim did not write (`message.recorded` False,
        `Settings.record_at_lease`): the execution is written here, running under a fresh
        lease token, with `job`'s snapshot as it now is, in one conditional put under the
        occurrence's deterministic id (DESIGN invariant 3). When the execution exists already
        (another copy of the message leased it, or the watchdog wrote it pending after the
        claim's watch list found it unstarted), the ordinary lease decides, from what is
        stored: ConflictError for a duplicate or stale message."""
        expires = to_ms(now + timedelta(seconds=self._settings.lease_sec))
        record = _unrecorded(message, job, ExecState.RUNNING, now).model_copy(
            update={
                "lease_token": uuid.uuid4().hex,
                "worker_id": worker_id,
                "lease_expires_at": expires,
                "started_at": now,
                "lag_ms": to_ms(now) - to_ms(message.scheduled_time),
            }
        )
        check_at = expires if "check_at" in self._lease_check_at(expires) else None
        if self._executions.create(record, check_at_ms=check_at):
            return record
        return self.lease(message, worker_id, now, job=job)

    def record_unrecorded(self, message: LaneMessage, job: JobRecord, now: datetime) -> None:
        """Write an occurrence its claim did not write as pending, from `job` as it now is,
        outside the `open` index (its claim's watch list covers it), unless it exists: what a
        worker does before it sends such a message back rather than leasing it."""
        self._executions.create(_unrecorded(message, job, ExecState.PENDING, now), check_at_ms=None)

    def skip_unrecorded(
        self, message: LaneMessage, job: JobRecord, now: datetime, *, reason: str
    ) -> ExecutionRecord:
        """Record an occurrence its claim did not write, and that must not run, as skipped
        with `reason` (`skip`'s counterpart for `message.recorded` False): written from `job`
        under its deterministic id, or, when it exists already, skipped as `skip` does."""
        record = _unrecorded(message, job, ExecState.SKIPPED, now, reason=reason).model_copy(
            update={"finished_at": now}
        )
        if not self._executions.create(record, check_at_ms=None):
            return self.skip(
                message.tenant_id, message.execution_id, message.attempt, now, reason=reason
            )
        self.ended(record, ExecState.SKIPPED, now)
        return record

    def heartbeat(self, record: ExecutionRecord, now: datetime) -> ExecutionRecord:
        """Extend the lease by `lease_sec` from `now`; the execution as it is now (its
        `cancel_requested` tells the worker to stop). ConflictError when the lease was lost."""
        expires = to_ms(now + timedelta(seconds=self._settings.lease_sec))
        return self._write(
            record,
            Transition(
                expect=lease_fence(record),
                set={"lease_expires_at": expires, **self._lease_check_at(expires)},
                add={"heartbeat_seq": 1},
            ),
        )

    def complete(
        self, record: ExecutionRecord, state: ExecState, now: datetime, report: rules.Report
    ) -> bool:
        """End a leased execution as `state` (succeeded, failed, dead or cancelled), then do
        what follows an end; False when the lease moved on (nothing applied)."""
        values: dict[str, object] = {"state": state, "finished_at": format_time(now)}
        if report.error:
            values["error"] = report.error
        if report.status_code is not None:
            values["status_code"] = report.status_code
        try:
            self._write(
                record,
                Transition(
                    expect=lease_fence(record),
                    set=values,
                    remove=OPEN_ATTRS,
                    append_attempt=rules.attempt_entry(record, report, now),
                ),
            )
        except ExecutionConflictError as exc:
            if not rules.applied_before(exc.current, record, state):
                return False
        self.ended(record, state, now, error=report.error, notify=True)
        return True

    def retry(
        self, record: ExecutionRecord, now: datetime, delay: timedelta, report: rules.Report
    ) -> ExecState | None:
        """A leased attempt failed and may be retried: running -> retry_wait at the next
        attempt, its message sent with `delay` (or, beyond SQS's longest delay, sent by the
        watchdog when due). `retry_wait`; `cancelled` when a cancel asked for meanwhile won
        (then it is completed as cancelled); None when the lease moved on."""
        plan = rules.retry_plan(now, delay, self._settings.pending_resend_after_sec)
        written = self._unless_cancelled(
            record,
            now,
            Transition(
                expect=lease_fence(record),
                set={
                    "state": ExecState.RETRY_WAIT,
                    "attempt": record.attempt + 1,
                    "retry_at": format_time(plan.retry_at),
                    "check_at": plan.check_at,
                    "error": report.error,
                },
                remove=LEASE_ATTRS,
                append_attempt=rules.attempt_entry(record, report, now),
                expect_absent=UNLESS_CANCEL_REQUESTED,
            ),
        )
        if not isinstance(written, ExecutionRecord):
            return written
        if plan.send_delay_sec is not None:
            self._send(written, record.attempt + 1, plan.send_delay_sec)
        return ExecState.RETRY_WAIT

    def give_back(
        self, record: ExecutionRecord, now: datetime, report: rules.Report, *, delay_sec: int = 0
    ) -> ExecState | None:
        """Return a leased execution to its lane at the same attempt, for another worker
        (running -> pending, no attempt used), its message sent with `delay_sec`. `pending`;
        `cancelled` when a cancel asked for meanwhile won; None when the lease moved on."""
        written = self._unless_cancelled(
            record,
            now,
            Transition(
                expect=lease_fence(record),
                set={
                    "state": ExecState.PENDING,
                    "check_at": self.check_at(now, delay_sec=delay_sec),
                },
                remove=LEASE_ATTRS,
                append_attempt=rules.attempt_entry(record, report, now),
                expect_absent=UNLESS_CANCEL_REQUESTED,
            ),
        )
        if not isinstance(written, ExecutionRecord):
            return written
        self._send(written, delay_sec=delay_sec)
        return ExecState.PENDING

    def _unless_cancelled(
        self, record: ExecutionRecord, now: datetime, change: Transition
    ) -> ExecutionRecord | ExecState | None:
        """A lease holder's write that must not apply once a cancel was asked for: then the
        execution is completed as cancelled instead."""
        try:
            return self._write(record, change)
        except ExecutionConflictError as exc:
            if exc.current.cancel_requested and rules.holds_lease(exc.current, record):
                done = self.complete(
                    record, ExecState.CANCELLED, now, rules.CANCELLED_WHILE_RUNNING
                )
                return ExecState.CANCELLED if done else None
            return None

    # The watchdog: an execution whose `check_at` passed.

    def resend(self, record: ExecutionRecord, now: datetime) -> None:
        """A pending execution nobody leased (its message never reached or left SQS): send a
        new message at its attempt, and look again after the resend wait."""
        self._write(
            record,
            Transition(
                expect={"state": ExecState.PENDING, "attempt": record.attempt},
                set={"check_at": self.check_at(now)},
            ),
        )
        self._send(record, record.attempt)

    def release_retry(self, record: ExecutionRecord, now: datetime) -> None:
        """A retry whose wait outlasted SQS's longest delay is due: retry_wait -> pending, and
        its message sent."""
        self._write(
            record,
            Transition(
                expect={"state": ExecState.RETRY_WAIT, "attempt": record.attempt},
                set={"state": ExecState.PENDING, "check_at": self.check_at(now)},
            ),
        )
        self._send(record, record.attempt)

    def postpone(self, record: ExecutionRecord, now: datetime) -> None:
        """A queued execution whose overlap slot is still taken: look again after the resend
        wait (its predecessor's end promotes it sooner)."""
        self._write(
            record,
            Transition(
                expect={"state": ExecState.QUEUED, "attempt": record.attempt},
                set={"check_at": self.check_at(now)},
            ),
        )

    def recheck_at_expiry(self, record: ExecutionRecord) -> None:
        """A live lease: look again when it expires, not on every sweep until then. Fenced on
        the lease, so a run that ended or moved on meanwhile is left as it is."""
        self._write(
            record,
            Transition(expect=lease_fence(record), set={"check_at": record.lease_expires_at}),
        )

    def expire(self, record: ExecutionRecord, now: datetime) -> ExecState:
        """A lease expired (its worker died or stalled): what `rules.expiry` decides, written
        and followed through. `cancelled` and `dead` end it (and what follows an end is done);
        `pending` sends its next attempt. ConflictError when the worker renewed it meanwhile.
        """
        # The heartbeat sequence is part of the fence (DESIGN: reclaim is conditional on it): a
        # late worker whose heartbeat lands between our read and this write has renewed the
        # lease, and without it we would hand a live execution to a second worker.
        fence = {**lease_fence(record), "heartbeat_seq": record.heartbeat_seq}
        report = rules.Report("lease_expired", f"lease held by {record.worker_id} expired")
        outcome = rules.expiry(record)
        if outcome == ExecState.CANCELLED:
            report = replace(report, outcome=ExecState.CANCELLED.value)
            self._end_expired(
                record, fence, report, now, outcome, "cancelled; its worker stopped reporting", ()
            )
        elif outcome == ExecState.DEAD:
            # Fenced on the flag too: a cancel asked for after our read makes it fail, and the
            # next sweep reads the flag and cancels instead.
            self._end_expired(
                record,
                fence,
                report,
                now,
                outcome,
                "lease expired on the last attempt",
                UNLESS_CANCEL_REQUESTED,
            )
        else:
            self._write(
                record,
                Transition(
                    expect=fence,
                    set={
                        "state": ExecState.PENDING,
                        "attempt": record.attempt + 1,
                        "check_at": self.check_at(now),
                    },
                    remove=LEASE_ATTRS,
                    append_attempt=rules.attempt_entry(record, report, now),
                    expect_absent=UNLESS_CANCEL_REQUESTED,
                ),
            )
            self._send(record, record.attempt + 1)
        return outcome

    def _end_expired(
        self,
        record: ExecutionRecord,
        fence: dict[str, object],
        report: rules.Report,
        now: datetime,
        state: ExecState,
        error: str,
        absent: tuple[str, ...],
    ) -> None:
        """End an expired lease as `state`, marked `follow_up` and left in the `open` index
        (due now), then do what follows the end: a watchdog that dies between the two leaves
        the marker, and the next sweep finishes the follow-up (`follow_up`)."""
        ended = self._write(
            record,
            Transition(
                expect=fence,
                set={
                    "state": state,
                    "finished_at": format_time(now),
                    "error": error,
                    "follow_up": True,
                    "check_at": to_ms(now),
                },
                append_attempt=rules.attempt_entry(record, report, now),
                expect_absent=absent,
            ),
        )
        self.follow_up(ended, now)

    def follow_up(self, record: ExecutionRecord, now: datetime) -> None:
        """What follows an end the watchdog wrote (`record` ended, marked `follow_up`): the
        job's note and notification at the end's own time, its overlap slot, its queue, its
        backfill; then the marker and the `open` index entry go. Safe to redo: the note is
        the same note again (`JobStore.record_outcome`), an incident opens once, and the
        other steps are conditional on what they find. ConflictError when another sweep took
        the marker away first."""
        state = record.state
        self.ended(record, state, record.finished_at or now, error=record.error, notify=True)
        self._write(
            record,
            Transition(
                expect={"state": state, "attempt": record.attempt, "follow_up": True},
                remove=(*OPEN_ATTRS, "follow_up"),
            ),
        )

    # A person: cancel and re-run (the API); `overlap: replace` and backfills cancel too.

    def stop(self, record: ExecutionRecord, now: datetime, *, reason: str) -> ExecutionRecord:
        """Cancel `record`: at once if it waits, through its worker if it runs.

        A waiting execution (pending, queued, retry_wait) becomes cancelled now; its message, if
        one is in flight, then finds nothing to lease. A running one gets `cancel_requested`,
        which its worker reads at its next heartbeat and the watchdog reads if the worker died;
        both then complete it as cancelled. Both writes are conditional on the state read:
        ConflictError means it changed meanwhile, and the caller reads it again.
        """
        if record.state == ExecState.RUNNING:
            return self._write(
                record,
                Transition(
                    expect=lease_fence(record), set={"cancel_requested": True, "reason": reason}
                ),
            )
        return self._write(
            record,
            Transition(
                expect={"state": record.state, "attempt": record.attempt},
                set={
                    "state": ExecState.CANCELLED,
                    "finished_at": format_time(now),
                    "reason": reason,
                },
                remove=(*OPEN_ATTRS, "retry_at"),
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
                remove=OPEN_ATTRS,
            ),
        )
        self.ended(record, ExecState.SKIPPED, now)
        return record

    def rerun(
        self,
        record: ExecutionRecord,
        now: datetime,
        *,
        budget: int,
        definition: Mapping[str, object],
        reason: str,
    ) -> ExecutionRecord:
        """Re-run a dead, failed or cancelled execution (`rules.RERUNNABLE`) with `budget`
        more attempts: -> pending at its next attempt, back in the `open` index, sent.
        `definition` overrides what it runs (the job as it is now). ConflictError when it
        changed since `record` was read."""
        updated = self._write(
            record,
            Transition(
                expect={"state": record.state, "attempt": record.attempt},
                set={
                    **definition,
                    "state": ExecState.PENDING,
                    "attempt": record.attempt + 1,
                    "max_attempts": record.attempt + budget,
                    "rerun": (record.rerun or 0) + 1,
                    "rerun_from": record.attempt,
                    "open_shard": open_shard_of(record.execution_id, self._executions.open_shards),
                    "check_at": self.check_at(now),
                    "reason": reason,
                },
                remove=("finished_at", *LEASE_ATTRS, "cancel_requested"),
            ),
        )
        self._send(updated, updated.attempt)
        return updated

    # Workflow runs (`RunEngine`): a run is its occurrence's execution with `run_tasks` set.

    def start_run(self, run: ExecutionRecord, now: datetime, tasks: int) -> ExecutionRecord:
        """A pending run starts: -> running in generation 0 with `tasks` tasks. ConflictError
        when another start won.

        A run claimed ahead begins at its time, not at the claim: its tasks are held until then
        (`RunEngine._dispatch`), so its start and lag never read as before its time."""
        begins = max(now, run.scheduled_time)
        return self._write(
            run,
            Transition(
                expect={"state": ExecState.PENDING, "attempt": run.attempt},
                set={
                    "state": ExecState.RUNNING,
                    "started_at": format_time(begins),
                    "run_gen": 0,
                    "run_tasks": tasks,
                    "check_at": self.check_at(now),
                },
                set_if_absent={"lag_ms": to_ms(begins) - to_ms(run.scheduled_time)},
            ),
        )

    def fail_run(self, run: ExecutionRecord, now: datetime, error: str) -> None:
        """A pending run that cannot start (its job was deleted or is no longer a workflow):
        -> failed, and what follows an end. Nothing when another writer moved it first."""
        try:
            self._write(
                run,
                Transition(
                    expect={"state": ExecState.PENDING, "attempt": run.attempt},
                    set={
                        "state": ExecState.FAILED,
                        "finished_at": format_time(now),
                        "error": error,
                    },
                    remove=OPEN_ATTRS,
                ),
            )
        except ConflictError:
            return
        self.ended(run, ExecState.FAILED, now)

    def finish_run(
        self, run: ExecutionRecord, gen: int, state: ExecState, error: str | None, now: datetime
    ) -> bool:
        """A running run whose tasks all ended in generation `gen`: -> `state` (succeeded or
        failed, `error` naming the tasks that did not succeed), and what follows an end. False
        when another writer ended it first or it moved to a later generation."""
        values: dict[str, object] = {"state": state, "finished_at": format_time(now)}
        remove: tuple[str, ...] = OPEN_ATTRS
        if error is not None:
            values["error"] = error
        else:
            remove = (*OPEN_ATTRS, "error")
        try:
            self._write(
                run,
                Transition(
                    expect={"state": ExecState.RUNNING, "run_gen": gen}, set=values, remove=remove
                ),
            )
        except ConflictError:
            return False
        self.ended(run, state, now)
        return True

    def rerun_run(self, run: ExecutionRecord, gen: int, now: datetime) -> ExecutionRecord:
        """A failed run re-runs its failed tasks: -> running in generation `gen`, back in the
        `open` index. ConflictError when it changed since `run` was read."""
        return self._write(
            run,
            Transition(
                expect={"state": ExecState.FAILED, "run_gen": run.run_gen},
                set={
                    "state": ExecState.RUNNING,
                    "run_gen": gen,
                    "open_shard": open_shard_of(run.execution_id, self._executions.open_shards),
                    "check_at": self.check_at(now),
                    "reason": "re-run of its failed tasks requested",
                    "ended_count": 0,
                },
                remove=("finished_at", "error"),
            ),
        )

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
        note = self._note_outcome(record, state, now)
        overlap = overlap_rule(record.overlap)
        if overlap.holds_slot:
            self._jobs.release_slot(record.tenant_id, record.job_id, record.execution_id)
        if overlap.promotes_queued:
            self.promote(record.tenant_id, record.job_id, now)
        if record.backfill_id is not None:
            self.backfills.pump(record.tenant_id, record.job_id, record.backfill_id, now)
        if notify and self._notifier is not None and note is not None:
            self._notifier.notify_state(record, state, note, now, error)

    def _note_outcome(
        self, record: ExecutionRecord, state: ExecState, now: datetime
    ) -> OutcomeNote | None:
        """Note the outcome on the job, except a success that would change only its `last_*`
        pointers (the job's noted outcome a success, no failure streak, no open incident):
        that write was one unit of every execution. Readers take a newer success from the
        history instead (`takt.api.jobs`, `ExecutionStore.newest_ended_after`).

        Skipping must never leave an older outcome noted over a newer success. The success's
        completion is written before it reads the job, and a noted outcome reads the history
        after its write; both consistently, so one of the two sees the other: either the
        success finds the job unsettled and notes itself, or the note finds the newer success
        and notes it after itself (a success's note is idempotent; a failure's is not, which
        is why only successes are taken from the history), and the failure notifies nothing,
        as when its note came second and was refused. What was noted last is then the newest
        outcome, as when every execution noted its own. A noted success needs no such read: a
        newer success that skipped read a success noted before it, so the job's outcome,
        streak and incidents are right, and only its pointers lag (readers take them from the
        history).
        """
        jobs = self._jobs
        if state is ExecState.SUCCEEDED and jobs.outcome_settled(record.tenant_id, record.job_id):
            return None
        note = jobs.record_outcome(
            record.tenant_id, record.job_id, record.execution_id, state.value, now
        )
        if note is None or state is ExecState.SUCCEEDED:
            # A newer success that skipped its note read a success noted before this one: the
            # job's state is right, and readers find the newer pointer in the history.
            return note
        newer = self._executions.newest_ended_after(
            record.tenant_id, record.job_id, record.execution_id, consistent=True
        )
        if newer is not None and newer.state is ExecState.SUCCEEDED:
            jobs.record_outcome(
                record.tenant_id,
                record.job_id,
                newer.execution_id,
                ExecState.SUCCEEDED.value,
                newer.finished_at or now,
            )
            # A newer run succeeded: this outcome is not the job's state, and its note,
            # overwritten, must not open an incident (as when its note came second).
            return None
        return note


def _unrecorded(
    message: LaneMessage, job: JobRecord, state: ExecState, now: datetime, reason: str | None = None
) -> ExecutionRecord:
    """The execution of an occurrence its claim did not write, from `job` as it now is, dated
    from its claim (the message's `claimed_at`, else `now`)."""
    return ExecutionRecord.for_job(
        job,
        message.execution_id,
        message.scheduled_time,
        state,
        message.claimed_at or now,
        reason=reason,
    )
