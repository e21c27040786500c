"""A job's notification policy: light enough for `takt.config` to import (no schedules, no AWS)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from takt.models.targets import EventBusSpec, HttpSpec, SnsSpec, parse_target

NotifyEvent = Literal["dead", "stopped"]
NOTIFY_EVENTS: tuple[NotifyEvent, ...] = ("dead", "stopped")


class NotifyPolicy(BaseModel):
    """Whom to tell when a job's runs go wrong (docs/OPERATIONS.md, "Notifications").

    `dead`: an execution ended `dead` (retries spent) or `failed` (the target ruled a retry out).
    `stopped`: `after_failures` executions in a row ended so. Each opens one incident per job,
    notified once, and the job's next succeeded execution closes it (notified as resolved).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    to: str = Field(
        description="an SNS topic ARN, an EventBridge bus ARN or an http(s) webhook URL "
        "(signed like HTTP targets)",
        max_length=2048,
    )
    on: list[NotifyEvent] = Field(default_factory=lambda: list(NOTIFY_EVENTS), max_length=2)
    after_failures: int = Field(default=3, ge=1, le=100)

    @field_validator("to")
    @classmethod
    def _destination(cls, value: str) -> str:
        spec = parse_target(value)
        if not isinstance(spec, HttpSpec | SnsSpec | EventBusSpec):
            raise ValueError(  # noqa: TRY004 - a bad destination is a bad value
                "a notification goes to an SNS topic ARN, an EventBridge bus ARN or an http(s) URL"
            )
        return spec.text() if isinstance(spec, HttpSpec) else value

    @field_validator("on")
    @classmethod
    def _distinct(cls, value: list[NotifyEvent]) -> list[NotifyEvent]:
        return sorted(set(value))
