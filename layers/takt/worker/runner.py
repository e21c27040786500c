"""Running one execution: lease, a supervised call, and a completion fenced on the lease.

Every write here is conditional on (execution id, attempt, lease token) (DESIGN invariant 4):
a worker whose lease was taken over (it was paused, or its clock is off) gets a condition failure,
which is recorded as a fenced report and never applied.

The lease is the first write for a message: a duplicate or stale message fails its condition and
costs one write, and a leased execution carries the snapshot of what to run, so the happy path is
three writes (lease, completion, the job's last outcome). An occurrence claimed ahead of its
time costs one read before them: the job as it now is, so an edit acknowledged before the due
time decides the occurrence (`takt.worker.recheck`): skipped with the reason, or run as the job
now is.

The writes themselves are the execution lifecycle's named operations (`takt.executions`:
`lease`, `heartbeat`, `complete`, `retry`, `give_back`, `requeue`); this module decides when to
make them. The lease and its heartbeats leave the execution's `check_at` where it is when a lease
outlasts the watchdog's resend wait (`rules.lease_moves_check_at`): every writer that makes an
execution runnable sets `check_at` to at most `pending_resend_after_sec` after the message can
first be taken, so it already falls before the lease's expiry, and the watchdog, finding a live
lease there, moves it to the expiry itself. A lease then changes nothing the `open` index holds
and costs one write unit instead of three (docs/CAPACITY.md).

The target is called in a thread of its own while this one supervises: every `heartbeat_sec` it
extends the lease, and the heartbeat's answer tells it when a cancel was asked for. Python cannot
kill a thread, so stopping a call means no longer waiting for it: the call's `StopSignal` tells a
cooperative handler to stop, an HTTP call ends by its own timeout, and whatever a stopped call
answers later is ignored. A run ends when:

- the call answers: succeeded, failed, retry_wait or dead;
- the execution's `timeout_sec` passes: a retryable failure;
- a heartbeat finds `cancel_requested`: cancelled, no retry (a retry write is fenced on the flag
  too, so a cancel that lands after the last heartbeat still wins over a retry);
- a heartbeat is fenced out (the lease was taken over): nothing but the fenced report is written;
- the lease's expiry, less the clock margin, passes on the worker's own monotonic clock without a
  successful heartbeat (the table unreachable, every write failing): the call is told to stop and
  nothing at all is written (`lease_lost`). The watchdog takes an expired lease only once its own
  wall clock is past the expiry plus the margin, so with clocks that agree within the margin a
  second attempt (or `dead`, on the last one) starts only after this worker stopped. Heartbeats
  are written in a thread of their own, so a write that hangs cannot keep the worker past that
  instant;
- the host's deadline comes (a Lambda near its timeout, a worker stopping): the execution is
  given back, pending again at the same attempt with a fresh message, no attempt used. The
  `MAX_GIVE_BACKS`-th give-back of one attempt counts as a retryable failure instead, so an
  execution that can never finish within its host's time does not circle forever.

Before the lease, the `WorkerGate` (docs/FAIRNESS.md) may say "not now": the target host has
no token left or the tenant runs as many executions as its cap allows. The message is then sent
back with a delay, as for an unserved handler, and the execution stays pending at its attempt.
A running slot taken at the gate is freed on every end of the run but a fenced one (the lease,
and with it the slot, went to someone else).

In a multi-region deployment the worker also asks its region's fence (`takt.regions.fence`)
before it leases and before it reports: a region that does not hold the region lease raises
`Fenced` before the lease (the message goes back to its lane, nothing written), skips its
heartbeats and reports nothing at the end of a run (`region_fenced`), so the lease expires and
the watchdog of the region that holds the lease takes the execution, as after a worker that died.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from takt.clock import Clock
from takt.config import Settings, settings_slice
from takt.executions import rules
from takt.executions.lifecycle import Incidents, Lifecycle
from takt.fairness.gate import WorkerGate
from takt.models.calls import CallContext, StopSignal, TargetResult, Targets
from takt.models.lanes import LaneMessage, Lanes
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.models.regions import Fence, Fenced, Unfenced
from takt.observability import logger
from takt.retry import backoff_delay
from takt.store.errors import ConflictError, ExecutionConflictError, NotFoundError
from takt.store.ports import LifecycleJobs, RunnerExecutions
from takt.worker.deadline import HostDeadline
from takt.worker.recheck import Verdict, claimed_ahead, judge

# How long a message for a handler this worker does not serve waits before it is offered again.
UNSERVED_DELAY_SEC = 5
# Outcomes after which the execution's lease is someone else's (or the watchdog's to take), so
# its running slot is not this worker's to free.
LEASE_GONE = frozenset({"fenced", "lease_lost", "region_fenced"})


@dataclass(frozen=True)
class RunOutcome:
    """What happened to one message: `state` is the execution's state after this worker, or
    `fenced`, `lease_lost` (stopped unreported: the lease expired on the worker's clock),
    `missing`, `unserved` (sent back for a worker that serves its handler) or `given_back`
    (sent back because this worker had to stop)."""

    execution_id: str
    state: str
    detail: str = ""
    lag_ms: int | None = None


class _Once:
    """`action` the first time this is called, nothing after (nothing at all when None): a
    message is released before its hold or at its lease, never twice."""

    def __init__(self, action: Callable[[], None] | None) -> None:
        self._action = action

    def __call__(self) -> None:
        action, self._action = self._action, None
        if action is not None:
            action()


@dataclass(frozen=True)
class RunnerSettings:
    """The settings the runner reads (`of` cuts them from `Settings`)."""

    lease_sec: float
    heartbeat_sec: float
    clock_margin_sec: float
    pending_resend_after_sec: float
    dispatch_ahead_sec: float
    unserved_limit_sec: float
    worker_id: str | None
    worker_tenant: str | None
    tenants_table: str  # the lifecycle's backfills

    @classmethod
    def of(cls, settings: Settings) -> RunnerSettings:
        return settings_slice(cls, settings)


class ExecutionRunner:
    def __init__(
        self,
        settings: RunnerSettings,
        jobs: LifecycleJobs,
        executions: RunnerExecutions,
        lanes: Lanes,
        targets: Targets,
        clock: Clock,
        worker_id: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        unserved_delay_sec: int = UNSERVED_DELAY_SEC,
        gate: WorkerGate | None = None,
        notifier: Incidents | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        fence: Fence | None = None,
    ) -> None:
        self._settings = settings
        self._fence = fence or Unfenced()
        # The clock the lease's local expiry is measured on: never the wall clock, which may
        # jump or disagree with the watchdog's (DESIGN invariants 5 and 10).
        self._monotonic = monotonic
        self._jobs = jobs
        self._executions = executions
        self._targets = targets
        self._clock = clock
        self._sleep = sleep
        self._unserved_delay_sec = unserved_delay_sec
        self._gate = gate
        self._lifecycle = Lifecycle(settings, jobs, executions, lanes, notifier=notifier)
        self.worker_id = (
            worker_id or settings.worker_id or f"w-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        )

    def process(
        self,
        message: LaneMessage,
        *,
        host: HostDeadline | None = None,
        on_release: Callable[[], None] | None = None,
    ) -> RunOutcome:
        """Handle one lane message; infrastructure errors raise so the message is retried.

        `host` is when the process running this must be done. `on_release` is called at most
        once, when the message stops being the execution's way back, and never for a message
        that took no lease and held nothing:
        - at the lease, before the call starts: from then on the execution is `running` under
          this worker's lease, durable in the table, and a copy of its message could only meet
          the lease's condition and be dropped, so its recovery rests on the lease and the
          watchdog (which takes an expired lease back);
        - before the hold of a message claimed ahead of its time (up to `dispatch_ahead_sec`
          and a second): its execution is `pending` with a `check_at` at most
          `pending_resend_after_sec` after the message could first be taken, where the
          watchdog finds it and sends it again if this worker dies or fails before the lease
          (sooner than the message's visibility of twice the lease would bring it back), so the
          hold need not keep the message in flight either.
        A `takt worker` deletes the message there, so neither a run's call nor the second
        before its time holds one of SQS's in-flight messages (120,000 a queue). It must not
        raise.
        """
        host = host or HostDeadline()
        release = _Once(on_release)
        # Before any write: a fenced region gives the message back untouched (Fenced raises).
        self._fence.epoch()
        refused = self._admit(message, host, release)
        if refused is not None:
            return refused
        verdict = Verdict()
        job: JobRecord | None = None
        if not message.recorded or claimed_ahead(message, self._settings.clock_margin_sec):
            # After the hold: an edit acknowledged before the due time is in this read. An
            # occurrence its claim did not write is written from it (`record_at_lease`).
            job = self._current_job(message)
            verdict = judge(job, message)
        try:
            # Again after the hold and the gate, which may have taken a few seconds.
            self._fence.epoch()
        except Fenced:
            self._free(message.tenant_id, message.execution_id)
            raise
        # Taken before the lease is written, so the lease's local expiry is never later than
        # the expiry the write stores, however long the write takes.
        leased_at = self._monotonic()
        try:
            if verdict.skip_reason is not None:
                return self._skip(message, verdict.skip_reason, job)
            leased = self._lease(message, job, verdict)
        except NotFoundError:
            self._free(message.tenant_id, message.execution_id)
            return RunOutcome(message.execution_id, "missing", "no such execution")
        except ExecutionConflictError as exc:
            current = exc.current
            if current.state != ExecState.RUNNING:
                # A running execution holds the slot under the same id: only its run frees it.
                self._free(message.tenant_id, message.execution_id)
            return RunOutcome(
                message.execution_id, current.state.value, "duplicate or stale message"
            )
        release()
        outcome = self._supervise(leased, leased_at, host)
        if outcome.state not in LEASE_GONE:
            self._free(leased.tenant_id, leased.execution_id)
        return outcome

    def _admit(
        self,
        message: LaneMessage,
        host: HostDeadline,
        release: Callable[[], None],
    ) -> RunOutcome | None:
        """The message sent back when this worker does not run it now (another worker's
        handler or tenant, the host's time up, the tenant or host over its limits), or None
        to run it, once its scheduled time has come (a message claimed ahead is released
        before its hold: `process`)."""
        if message.handler is not None and not self._targets.serves(message.handler):
            return self._unserved(message, message.handler)
        tenant = self._settings.worker_tenant
        if tenant is not None and message.tenant_id != tenant:
            # A worker serving one tenant (`takt worker --tenant`) never leases another's
            # execution: its role may not even write it (docs/SECURITY.md).
            return self._requeue(message, self._unserved_delay_sec, "unserved")
        early = (message.scheduled_time - self._clock.now()).total_seconds()
        if early > 0:
            # Claimed ahead of its time (dispatch_ahead_sec): start it on the dot, holding no
            # in-flight message meanwhile (the watchdog's check_at is its way back).
            release()
            self._sleep(min(early, self._settings.dispatch_ahead_sec + 1))
        if host.passed():
            return self._requeue(message, 0, "given_back")
        if self._gate is not None:
            wait = self._gate.admit(message)
            if wait is not None:
                return self._requeue(message, wait.delay_sec, wait.reason)
        return None

    def _free(self, tenant_id: str, execution_id: str) -> None:
        if self._gate is not None:
            self._gate.release(tenant_id, execution_id)

    def _current_job(self, message: LaneMessage) -> JobRecord | None:
        try:
            return self._jobs.get(message.tenant_id, message.job_id)
        except NotFoundError:
            return None

    def _recorded(self, message: LaneMessage) -> LaneMessage:
        """The message of an execution that is written: one its claim did not write is written
        pending first, from the job as it now is, for the paths that update the stored
        execution without leasing it (a copy sent back, an unserved handler's failure).
        NotFoundError once its job is gone."""
        if message.recorded:
            return message
        job = self._current_job(message)
        if job is None:
            raise NotFoundError(message.execution_id)
        self._lifecycle.record_unrecorded(message, job, self._clock.now())
        return message.model_copy(update={"recorded": True})

    def _lease(
        self, message: LaneMessage, current: JobRecord | None, verdict: Verdict
    ) -> ExecutionRecord:
        """The lease: of the stored execution, or, for an occurrence its claim did not write,
        the write of the execution itself, from the job as read just before."""
        now = self._clock.now()
        if not message.recorded and current is not None:
            return self._lifecycle.lease_unrecorded(message, current, self.worker_id, now)
        return self._lifecycle.lease(message, self.worker_id, now, job=verdict.job)

    def _skip(self, message: LaneMessage, reason: str, current: JobRecord | None) -> RunOutcome:
        """Record a claimed-ahead occurrence that an edit decided against as skipped, with the
        reason, without running it. ExecutionConflictError/NotFoundError as for a lease. An
        occurrence its claim did not write is written skipped from the job; one whose job was
        deleted is written by nobody: it has no job to record it from, and a deleted job's
        occurrences are no longer due (DESIGN invariant 1 counts an active job's)."""
        now = self._clock.now()
        if not message.recorded and current is not None:
            record = self._lifecycle.skip_unrecorded(message, current, now, reason=reason)
        else:
            record = self._lifecycle.skip(
                message.tenant_id, message.execution_id, message.attempt, now, reason=reason
            )
        logger.info("claimed occurrence skipped", execution_id=record.execution_id, reason=reason)
        self._free(record.tenant_id, record.execution_id)
        return RunOutcome(record.execution_id, ExecState.SKIPPED.value, reason)

    def _unserved(self, message: LaneMessage, handler: str) -> RunOutcome:
        """Send back a message for a handler this worker does not serve, noting since when no
        worker served it; once that is `unserved_limit_sec` ago the attempt fails instead, so
        an execution of a handler the deployment does not ship ends, with the reason."""
        now = self._clock.now()
        since = message.unserved_since or now
        if (now - since).total_seconds() < self._settings.unserved_limit_sec:
            return self._requeue(message, self._unserved_delay_sec, "unserved", since)
        error = (
            f"no worker serves handler {handler!r}: sent back for "
            f"{int((now - since).total_seconds())} s (unserved_limit_sec "
            f"{self._settings.unserved_limit_sec:g}); ship its module to the workers "
            "(TAKT_HANDLER_MODULES, takt worker --module) and re-run it"
        )
        try:
            record = self._lifecycle.fail_unserved(self._recorded(message), now, error)
        except NotFoundError:
            return RunOutcome(message.execution_id, "missing", "no such execution")
        except ExecutionConflictError as exc:
            return RunOutcome(
                message.execution_id, exc.current.state.value, "duplicate or stale message"
            )
        logger.warning("handler unserved: execution failed", execution_id=record.execution_id)
        return RunOutcome(record.execution_id, ExecState.FAILED.value, error)

    def _requeue(
        self,
        message: LaneMessage,
        delay_sec: int,
        outcome: str,
        unserved_since: datetime | None = None,
    ) -> RunOutcome:
        """Send a not-yet-started execution back to its lane (`Lifecycle.requeue`)."""
        try:
            record = self._lifecycle.requeue(
                self._recorded(message), delay_sec, self._clock.now(), unserved_since=unserved_since
            )
        except NotFoundError:
            return RunOutcome(message.execution_id, "missing", "no such execution")
        except ExecutionConflictError as exc:
            return RunOutcome(
                message.execution_id, exc.current.state.value, "duplicate or stale message"
            )
        return RunOutcome(message.execution_id, outcome, f"sent back to the {record.lane} lane")

    def _supervise(
        self,
        record: ExecutionRecord,
        leased_at: float,
        host: HostDeadline,
    ) -> RunOutcome:
        lease = _LocalLease(self._monotonic, self._settings, leased_at)
        if lease.expired():
            # The lease write itself took the lease's whole time: calling now could overlap
            # the next attempt.
            return self._lease_lost(record)
        wake = threading.Event()
        stop = StopSignal()
        answers: list[TargetResult] = []
        started = time.monotonic()
        timeout_at = started + record.timeout_sec
        ctx = CallContext(
            job_id=record.job_id,
            execution_id=record.execution_id,
            attempt=record.attempt,
            scheduled_time=record.scheduled_time,
            payload=record.payload,
            timeout_sec=float(record.timeout_sec),
            deadline=min(timeout_at, host.at),
            stop=stop,
            tenant_id=record.tenant_id,
        )

        def call() -> None:
            try:
                answers.append(self._targets.call(record.target, ctx))
            except Exception as exc:  # noqa: BLE001 - a target's bug is this attempt's failure
                logger.exception("target call raised", execution_id=record.execution_id)
                answers.append(TargetResult("retryable", error=f"worker error: {exc!r}"))
            finally:
                wake.set()

        threading.Thread(target=call, name=f"call-{record.execution_id}", daemon=True).start()
        beat_at = started + self._settings.heartbeat_sec
        beat: _Heartbeat | None = None
        with host.watch(wake):
            while True:
                # Cleared before looking, so an answer or a deadline change that lands after the
                # look sets it again and the wait below returns at once instead of sleeping.
                wake.clear()
                if beat is not None and beat.done.is_set():
                    if not beat.reached:
                        beat = None
                    elif beat.current is None:
                        stop.set("lease_lost")
                        return self._fenced(record)
                    elif beat.current.cancel_requested:
                        stop.set("cancelled")
                        return self._cancel(record)
                    else:
                        lease.renewed(beat.sent_at)
                        beat = None
                if lease.expired():
                    stop.set("lease_lost")
                    return self._lease_lost(record)
                if answers:
                    return self._complete(record, answers[0])
                now = time.monotonic()
                if now >= host.at:
                    stop.set("shutdown")
                    return self._give_back(record)
                if now >= timeout_at:
                    stop.set("timeout")
                    return self._complete(
                        record,
                        TargetResult(
                            "retryable",
                            error=f"timed out after {record.timeout_sec}s",
                            duration_ms=int((now - started) * 1000),
                        ),
                    )
                if now >= beat_at:
                    # One heartbeat at a time: a beat still hanging skips this one.
                    if beat is None:
                        beat = _Heartbeat(self._monotonic, lambda: self._heartbeat(record), wake)
                    beat_at = now + self._settings.heartbeat_sec
                wake.wait(max(0.0, min(min(beat_at, timeout_at, host.at) - now, lease.left())))

    def _heartbeat(self, record: ExecutionRecord) -> ExecutionRecord | None:
        """Extend the lease; the execution as it is now, or None when the lease was lost.

        A write that fails for another reason (throttled past botocore's retries, the network)
        raises: the next beat tries again, and the lease's local expiry says when to give up.
        """
        self._fence.epoch()  # Fenced: this beat fails, and the lease runs out unextended.
        try:
            return self._lifecycle.heartbeat(record, self._clock.now())
        except (ConflictError, NotFoundError):
            logger.warning("lease lost", execution_id=record.execution_id)
            return None

    def _lease_lost(self, record: ExecutionRecord) -> RunOutcome:
        """The lease expired on this worker's clock: write nothing, not even a fenced count.

        The watchdog owns the execution from here (a next attempt, or `dead` on the last one);
        any write of ours could only race it, and the table is likely unreachable anyway.
        """
        logger.warning(
            "lease expired on the worker's clock: stopped, nothing reported",
            execution_id=record.execution_id,
            attempt=record.attempt,
        )
        return RunOutcome(
            record.execution_id, "lease_lost", "lease expired before a heartbeat succeeded"
        )

    def _region_fenced(self, record: ExecutionRecord) -> RunOutcome | None:
        """The end of a run in a region that lost the region lease: nothing reported, as for a
        lost lease; None when the region may still act."""
        try:
            self._fence.epoch()
        except Fenced:
            logger.warning(
                "region fenced: the run's end is not reported", execution_id=record.execution_id
            )
            return RunOutcome(record.execution_id, "region_fenced", "region lease lost")
        return None

    def _complete(self, record: ExecutionRecord, result: TargetResult) -> RunOutcome:
        fenced = self._region_fenced(record)
        if fenced is not None:
            return fenced
        if result.outcome == "success":
            return self._finish(record, ExecState.SUCCEEDED, result, None)
        if result.outcome == "permanent":
            return self._finish(record, ExecState.FAILED, result, result.error)
        if result.outcome == "unserved":
            # Only a message from before lane messages named their handler gets this far.
            return self._give_back(
                record, outcome="unserved", reason=result.error, delay_sec=self._unserved_delay_sec
            )
        if rules.last_attempt(record):
            return self._finish(record, ExecState.DEAD, result, result.error)
        return self._retry(record, result)

    def _finish(
        self, record: ExecutionRecord, state: ExecState, result: TargetResult, error: str | None
    ) -> RunOutcome:
        report = rules.Report(
            state.value, error, result.status_code, result.duration_ms, result.logs
        )
        if not self._lifecycle.complete(record, state, self._clock.now(), report):
            return self._fenced(record)
        return RunOutcome(record.execution_id, state.value, error or "", record.lag_ms)

    def _cancel(self, record: ExecutionRecord) -> RunOutcome:
        """Complete as cancelled: the call was told to stop and is no longer waited for."""
        fenced = self._region_fenced(record)
        if fenced is not None:
            return fenced
        report = rules.CANCELLED_WHILE_RUNNING
        if not self._lifecycle.complete(record, ExecState.CANCELLED, self._clock.now(), report):
            return self._fenced(record)
        return self._cancelled(record)

    def _cancelled(self, record: ExecutionRecord) -> RunOutcome:
        error = rules.CANCELLED_WHILE_RUNNING.error or ""
        return RunOutcome(record.execution_id, ExecState.CANCELLED.value, error, record.lag_ms)

    def _retry(self, record: ExecutionRecord, result: TargetResult) -> RunOutcome:
        delay = backoff_delay(record.retry, record.attempt, retry_after=result.retry_after_sec)
        report = rules.Report(
            "retry", result.error, result.status_code, result.duration_ms, result.logs
        )
        written = self._lifecycle.retry(record, self._clock.now(), delay, report)
        if written == ExecState.RETRY_WAIT:
            return RunOutcome(
                record.execution_id, ExecState.RETRY_WAIT.value, result.error or "", record.lag_ms
            )
        return self._cancelled(record) if written == ExecState.CANCELLED else self._fenced(record)

    def _give_back(
        self,
        record: ExecutionRecord,
        *,
        outcome: str = "given_back",
        reason: str | None = "its worker had to stop before the call finished",
        delay_sec: int = 0,
    ) -> RunOutcome:
        """Return a leased execution to its lane at the same attempt, for another worker."""
        fenced = self._region_fenced(record)
        if fenced is not None:
            return fenced
        if outcome == "given_back" and rules.give_backs_exhausted(record):
            return self._complete(
                record,
                TargetResult(
                    "retryable",
                    error=f"given back {rules.MAX_GIVE_BACKS} times: the call does not finish "
                    "within its worker's time",
                ),
            )
        report = rules.Report(outcome, reason)
        written = self._lifecycle.give_back(record, self._clock.now(), report, delay_sec=delay_sec)
        if written == ExecState.PENDING:
            return RunOutcome(record.execution_id, outcome, reason or "", record.lag_ms)
        return self._cancelled(record) if written == ExecState.CANCELLED else self._fenced(record)

    def _fenced(self, record: ExecutionRecord) -> RunOutcome:
        """A stale report: the lease moved on. Count it on the execution, apply nothing."""
        fenced = self._region_fenced(record)
        if fenced is not None:
            return fenced
        logger.warning(
            "stale report fenced out", execution_id=record.execution_id, attempt=record.attempt
        )
        self._executions.record_fenced(record.tenant_id, record.execution_id)
        return RunOutcome(record.execution_id, "fenced", "lease lost before completion")


class _LocalLease:
    """A lease's expiry as its holder knows it, on its own monotonic clock.

    It ends `lease_sec - clock_margin_sec` after the moment just before the last write that set
    it (the lease or a heartbeat that succeeded): by then, on a watchdog whose wall clock agrees
    with this worker's within the margin, the lease is still at least a margin short of being
    taken.
    """

    def __init__(
        self, monotonic: Callable[[], float], settings: RunnerSettings, written_at: float
    ) -> None:
        self._monotonic = monotonic
        self._valid_sec = settings.lease_sec - settings.clock_margin_sec
        self._until = written_at + self._valid_sec

    def renewed(self, written_at: float) -> None:
        self._until = max(self._until, written_at + self._valid_sec)

    def left(self) -> float:
        return self._until - self._monotonic()

    def expired(self) -> bool:
        return self.left() <= 0


class _Heartbeat:
    """One heartbeat write, made in a thread of its own so that a write that hangs (the table
    unreachable, the SDK retrying) never keeps the supervisor past its lease's local expiry.

    `reached`: the write got an answer (`current`: the execution after it, or None when the
    lease was lost); False when it failed and the lease was not extended.
    """

    def __init__(
        self,
        monotonic: Callable[[], float],
        write: Callable[[], ExecutionRecord | None],
        wake: threading.Event,
    ) -> None:
        self.sent_at = monotonic()
        self.reached = False
        self.current: ExecutionRecord | None = None
        self.done = threading.Event()
        self._write = write
        self._wake = wake
        threading.Thread(target=self._run, name="heartbeat", daemon=True).start()

    def _run(self) -> None:
        try:
            self.current = self._write()
            self.reached = True
        except (ClientError, BotoCoreError, Fenced):
            logger.exception("heartbeat failed")
        finally:
            self.done.set()
            self._wake.set()
