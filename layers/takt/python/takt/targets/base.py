"""The outcome of calling a target, shared by every target kind."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

Outcome = Literal["success", "retryable", "permanent"]


@dataclass(frozen=True)
class CallContext:
    """Who is calling: sent to the target so it can deduplicate on the execution id."""

    job_id: str
    execution_id: str
    attempt: int
    scheduled_time: datetime
    payload: Any
    timeout_sec: float


@dataclass(frozen=True)
class TargetResult:
    outcome: Outcome
    status_code: int | None = None
    error: str | None = None
    retry_after_sec: float | None = None
    duration_ms: int = 0
