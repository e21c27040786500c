"""What every target kind shares: the call's context, its stop signal, and its outcome."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

# `unserved`: this worker has no handler of that name; the execution goes back, unharmed.
Outcome = Literal["success", "retryable", "permanent", "unserved"]
StopReason = Literal["cancelled", "timeout", "lease_lost", "shutdown"]


class StopSignal:
    """Why a running call should stop, set once by the worker and read by the target.

    The worker stops waiting for a call at once; the signal lets a cooperative handler stop its
    own work too (Python cannot kill a thread), and tells it why.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._reason: StopReason | None = None
        self._lock = threading.Lock()

    def set(self, reason: StopReason) -> None:
        """Ask the call to stop; the first reason given is the one kept."""
        with self._lock:
            if self._reason is None:
                self._reason = reason
        self._event.set()

    @property
    def reason(self) -> StopReason | None:
        return self._reason

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None) -> bool:
        """Block up to `timeout` seconds; True as soon as the call was asked to stop."""
        return self._event.wait(timeout)


@dataclass(frozen=True)
class CallContext:
    """Who is calling: sent to the target so it can deduplicate on the execution id.

    `deadline` is the `time.monotonic()` instant the call must end by: the execution's timeout
    or, when sooner, the moment its worker has to give the execution back. `tenant_id` decides
    which secrets the call may read (empty: none).
    """

    job_id: str
    execution_id: str
    attempt: int
    scheduled_time: datetime
    payload: Any
    timeout_sec: float
    deadline: float | None = None
    stop: StopSignal = field(default_factory=StopSignal)
    tenant_id: str = ""


@dataclass(frozen=True)
class TargetResult:
    outcome: Outcome
    status_code: int | None = None
    error: str | None = None
    retry_after_sec: float | None = None
    duration_ms: int = 0
    # Where the attempt's own output can be read (a container task's CloudWatch log stream).
    logs: str | None = None


class Targets(Protocol):
    """What calls a job's target (`takt.targets.router.TargetRouter`, over HTTP, AWS and the
    registered handlers): the runner takes this, so the engine imports no adapter."""

    def serves(self, handler: str) -> bool:
        """Whether this worker runs the registered handler `handler`."""
        ...

    def call(self, target: str, ctx: CallContext) -> TargetResult: ...
