"""Running one execution: lease, heartbeat, call, and a completion fenced on the lease.

Every write here is conditional on (execution id, attempt, lease token) (DESIGN invariant 4):
a worker whose lease was taken over (it was paused, or its clock is off) gets a condition failure,
which is recorded as a fenced report and never applied.

The lease is the first call for a message: a duplicate or stale message fails its condition and
costs one write, and a leased execution carries the snapshot of what to run, so the happy path is
three writes (lease, completion, the job's last outcome) and no read.
"""

from __future__ import annotations

import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from botocore.exceptions import ClientError

from takt.clock import Clock
from takt.config import Settings
from takt.dispatch.lanes import LaneMessage, LaneSender, Outgoing
from takt.models.ids import format_time, to_ms
from takt.models.records import ExecState, ExecutionRecord
from takt.observability import logger
from takt.retry import backoff_delay
from takt.store.errors import ConflictError, NotFoundError, is_condition_failure
from takt.store.executions import ExecutionStore, Transition
from takt.store.jobs import JobStore
from takt.targets.base import CallContext, TargetResult
from takt.targets.http import HttpTarget
from takt.worker.overlap import release_queued

OPEN_ATTRS = ("open_shard", "check_at")
MAX_SQS_DELAY_SEC = 900


@dataclass(frozen=True)
class RunOutcome:
    """What happened to one message: `state` is the execution's state after this worker."""

    execution_id: str
    state: str
    detail: str = ""
    lag_ms: int | None = None


class ExecutionRunner:
    def __init__(
        self,
        settings: Settings,
        jobs: JobStore,
        executions: ExecutionStore,
        lanes: LaneSender,
        http: HttpTarget,
        clock: Clock,
        worker_id: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._settings = settings
        self._jobs = jobs
        self._executions = executions
        self._lanes = lanes
        self._http = http
        self._clock = clock
        self._sleep = sleep
        self.worker_id = (
            worker_id or settings.worker_id or f"w-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        )

    def process(self, message: LaneMessage) -> RunOutcome:
        """Handle one lane message; infrastructure errors raise so the message is retried."""
        early = (message.scheduled_time - self._clock.now()).total_seconds()
        if early > 0:
            # Claimed ahead of its time (dispatch_ahead_sec): start it on the dot.
            self._sleep(min(early, self._settings.dispatch_ahead_sec + 1))
        try:
            leased = self._lease(message, self._clock.now())
        except NotFoundError:
            return RunOutcome(message.execution_id, "missing", "no such execution")
        except ConflictError as exc:
            current = ExecutionRecord.from_item(exc.current or {})
            return RunOutcome(
                message.execution_id, current.state.value, "duplicate or stale message"
            )
        result = self._call_with_heartbeats(leased)
        return self._complete(leased, result)

    def _lease(self, message: LaneMessage, now: datetime) -> ExecutionRecord:
        expires = now + timedelta(seconds=self._settings.lease_sec)
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
                    "lease_token": uuid.uuid4().hex,
                    "worker_id": self.worker_id,
                    "lease_expires_at": to_ms(expires),
                    "check_at": to_ms(expires),
                    "started_at": format_time(now),
                },
                # The schedule lag is measured at the first start only.
                set_if_absent={"lag_ms": to_ms(now) - to_ms(message.scheduled_time)},
            ),
        )

    def _call_with_heartbeats(self, record: ExecutionRecord) -> TargetResult:
        stop = threading.Event()
        beat = threading.Thread(
            target=self._heartbeat, args=(record, stop), name="heartbeat", daemon=True
        )
        beat.start()
        try:
            return self._http.call(
                record.target,
                CallContext(
                    job_id=record.job_id,
                    execution_id=record.execution_id,
                    attempt=record.attempt,
                    scheduled_time=record.scheduled_time,
                    payload=record.payload,
                    timeout_sec=float(record.timeout_sec),
                ),
            )
        finally:
            stop.set()
            beat.join()

    def _heartbeat(self, record: ExecutionRecord, stop: threading.Event) -> None:
        """Extend the lease every `heartbeat_sec` until told to stop or the lease is lost."""
        while not stop.wait(self._settings.heartbeat_sec):
            expires = to_ms(self._clock.now() + timedelta(seconds=self._settings.lease_sec))
            try:
                self._executions.transition(
                    record.tenant_id,
                    record.execution_id,
                    Transition(
                        expect=_fence(record),
                        set={"lease_expires_at": expires, "check_at": expires},
                        add={"heartbeat_seq": 1},
                    ),
                )
            except ConflictError:
                logger.warning("lease lost", execution_id=record.execution_id)
                return

    def _complete(self, record: ExecutionRecord, result: TargetResult) -> RunOutcome:
        if result.outcome == "success":
            return self._finish(record, ExecState.SUCCEEDED, result, None)
        if result.outcome == "permanent":
            return self._finish(record, ExecState.FAILED, result, result.error)
        if record.attempt >= record.max_attempts:
            return self._finish(record, ExecState.DEAD, result, result.error)
        return self._retry(record, result)

    def _attempt_entry(
        self, record: ExecutionRecord, outcome: str, result: TargetResult, error: str | None
    ) -> dict[str, object]:
        entry: dict[str, object | None] = {
            "attempt": record.attempt,
            "started_at": format_time(record.started_at) if record.started_at else None,
            "finished_at": format_time(self._clock.now()),
            "outcome": outcome,
            "error": error,
            "status_code": result.status_code,
            "duration_ms": result.duration_ms,
        }
        return {k: v for k, v in entry.items() if v is not None}

    def _finish(
        self, record: ExecutionRecord, state: ExecState, result: TargetResult, error: str | None
    ) -> RunOutcome:
        now = self._clock.now()
        values: dict[str, object] = {"state": state, "finished_at": format_time(now)}
        if error:
            values["error"] = error
        if result.status_code is not None:
            values["status_code"] = result.status_code
        try:
            self._executions.transition(
                record.tenant_id,
                record.execution_id,
                Transition(
                    expect=_fence(record),
                    set=values,
                    remove=OPEN_ATTRS,
                    append_attempt=self._attempt_entry(record, state.value, result, error),
                ),
            )
        except ConflictError:
            return self._fenced(record)
        self._jobs.record_outcome(
            record.tenant_id, record.job_id, record.execution_id, state.value, now
        )
        if record.overlap != "allow":
            self._jobs.release_slot(record.tenant_id, record.job_id, record.execution_id)
        if record.overlap == "queue":
            release_queued(
                self._jobs,
                self._executions,
                self._lanes,
                self._settings,
                record.tenant_id,
                record.job_id,
                now,
            )
        return RunOutcome(record.execution_id, state.value, error or "", record.lag_ms)

    def _retry(self, record: ExecutionRecord, result: TargetResult) -> RunOutcome:
        now = self._clock.now()
        delay = backoff_delay(record.retry, record.attempt, retry_after=result.retry_after_sec)
        retry_at = now + delay
        send_now = delay.total_seconds() <= MAX_SQS_DELAY_SEC
        # With a delayed message in flight the watchdog only needs to look if it never arrives;
        # a longer wait lives in DynamoDB and the watchdog sends it when due.
        check_at = retry_at + timedelta(
            seconds=self._settings.pending_resend_after_sec if send_now else 0
        )
        try:
            self._executions.transition(
                record.tenant_id,
                record.execution_id,
                Transition(
                    expect=_fence(record),
                    set={
                        "state": ExecState.RETRY_WAIT,
                        "attempt": record.attempt + 1,
                        "retry_at": format_time(retry_at),
                        "check_at": to_ms(check_at),
                        "error": result.error,
                    },
                    remove=("lease_token", "lease_expires_at"),
                    append_attempt=self._attempt_entry(record, "retry", result, result.error),
                ),
            )
        except ConflictError:
            return self._fenced(record)
        if send_now:
            self._lanes.send(
                [Outgoing.of(record, record.attempt + 1, math.ceil(delay.total_seconds()))]
            )
        return RunOutcome(
            record.execution_id, ExecState.RETRY_WAIT.value, result.error or "", record.lag_ms
        )

    def _fenced(self, record: ExecutionRecord) -> RunOutcome:
        """A stale report: the lease moved on. Count it on the execution, apply nothing."""
        logger.warning(
            "stale report fenced out", execution_id=record.execution_id, attempt=record.attempt
        )
        try:
            self._executions.record_fenced(record.tenant_id, record.execution_id)
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
        return RunOutcome(record.execution_id, "fenced", "lease lost before completion")


def _fence(record: ExecutionRecord) -> dict[str, object]:
    return {
        "state": ExecState.RUNNING,
        "attempt": record.attempt,
        "lease_token": record.lease_token,
    }
