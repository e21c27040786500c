"""The lifecycle's rules as pure functions of the execution, the clock and the settings.

Each rule is written once here and applied by `takt.executions.lifecycle`: no caller that makes
an execution runnable picks a `check_at` of its own, and the unit tests pin every rule without a
table (tests/unit/executions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from takt.models.ids import format_time, to_ms
from takt.models.records import ExecState, ExecutionRecord

MAX_SQS_DELAY_SEC = 900
"""SQS's longest per-message delay: a longer retry wait lives in DynamoDB instead."""

MAX_GIVE_BACKS = 3
"""The give-back of one attempt that counts as a retryable failure instead: an execution that
can never finish within its host's time does not circle forever."""

RERUNNABLE = frozenset({ExecState.DEAD, ExecState.FAILED, ExecState.CANCELLED})
"""The states a person may re-run an execution from (`Lifecycle.rerun`)."""


def check_at(now: datetime, resend_after_sec: float, *, delay_sec: float = 0) -> int:
    """When the watchdog looks at an execution that became runnable at `now` (epoch ms).

    A message sent with `delay_sec` is first visible after that delay; the watchdog resends it
    only if nobody leased it within `resend_after_sec` of then (`pending_resend_after_sec`).
    Earlier would duplicate messages that are merely waiting in a busy lane; later would delay
    the recovery of a lost one.
    """
    return to_ms(now + timedelta(seconds=delay_sec + resend_after_sec))


def lease_moves_check_at(lease_sec: float, resend_after_sec: float) -> bool:
    """Whether a lease must move `check_at` to its expiry: only when a lease is shorter than the
    resend wait, so the `check_at` it finds could fall after the lease expired and delay the
    watchdog's recovery of a dead worker. Otherwise the lease leaves `check_at` alone, which
    keeps it out of the `open` index's writes (docs/CAPACITY.md)."""
    return lease_sec < resend_after_sec


@dataclass(frozen=True)
class Report:
    """What one attempt came to, as the execution's history (`attempts`) keeps it."""

    outcome: str
    error: str | None = None
    status_code: int | None = None
    duration_ms: int | None = None
    logs: str | None = None


CANCELLED_WHILE_RUNNING = Report(ExecState.CANCELLED.value, "cancelled while running")
"""A worker that read `cancel_requested` stops waiting for its call and reports this."""


def attempt_entry(record: ExecutionRecord, report: Report, now: datetime) -> dict[str, object]:
    """The history entry of `record`'s current attempt, ended at `now` as `report` says."""
    entry: dict[str, object | None] = {
        "attempt": record.attempt,
        "started_at": format_time(record.started_at) if record.started_at else None,
        "finished_at": format_time(now),
        "outcome": report.outcome,
        "error": report.error,
        "status_code": report.status_code,
        "duration_ms": report.duration_ms,
        "logs": report.logs,
    }
    return {k: v for k, v in entry.items() if v is not None}


def last_attempt(record: ExecutionRecord) -> bool:
    """Whether a retryable failure of the current attempt ends the execution `dead`."""
    return record.attempt >= record.max_attempts


@dataclass(frozen=True)
class RetryPlan:
    """When a failed attempt's successor runs, when the watchdog looks, and the delay of the
    message sent now (None: the wait is longer than SQS allows, so it lives in DynamoDB and the
    watchdog sends the message when it is due)."""

    retry_at: datetime
    check_at: int
    send_delay_sec: int | None


def retry_plan(now: datetime, delay: timedelta, resend_after_sec: float) -> RetryPlan:
    """The plan of a retry `delay` after `now`. With a delayed message in flight the watchdog
    only needs to look if it never arrives; without one it looks when the retry is due."""
    retry_at = now + delay
    if delay.total_seconds() <= MAX_SQS_DELAY_SEC:
        return RetryPlan(
            retry_at, check_at(retry_at, resend_after_sec), math.ceil(delay.total_seconds())
        )
    return RetryPlan(retry_at, to_ms(retry_at), None)


def give_backs_exhausted(record: ExecutionRecord) -> bool:
    """Whether giving the current attempt back once more reaches `MAX_GIVE_BACKS`."""
    earlier = sum(
        1 for a in record.attempts if a.attempt == record.attempt and a.outcome == "given_back"
    )
    return earlier + 1 >= MAX_GIVE_BACKS


def expiry(record: ExecutionRecord) -> ExecState:
    """What an execution whose lease expired becomes: `cancelled` when a cancel was asked for
    (never retried), `dead` on its last attempt, else `pending` at its next attempt."""
    if record.cancel_requested:
        return ExecState.CANCELLED
    if last_attempt(record):
        return ExecState.DEAD
    return ExecState.PENDING


def holds_lease(current: ExecutionRecord | None, record: ExecutionRecord) -> bool:
    """Whether `record`'s lease is still `current`'s: running, same attempt, same token."""
    return (
        current is not None
        and current.state == ExecState.RUNNING
        and current.attempt == record.attempt
        and current.lease_token == record.lease_token
    )


def applied_before(
    current: ExecutionRecord | None, record: ExecutionRecord, state: ExecState
) -> bool:
    """Whether a terminal write that failed its fence had in fact been applied by our own first
    try, whose answer was lost before the SDK retried it (the terminal write keeps the lease
    token). Such a completion is not a stale report, and what follows it must still be done."""
    return (
        current is not None
        and current.state == state
        and current.attempt == record.attempt
        and current.lease_token == record.lease_token
    )
