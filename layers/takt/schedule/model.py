"""The three kinds of schedule a job can have. Each checks itself when built, so an invalid schedule
cannot exist and the functions that evaluate one never meet bad input."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

from takt.schedule.cron import parse_expression
from takt.schedule.dst import DstPolicy
from takt.schedule.exceptions import ScheduleError
from takt.schedule.zones import validate_time_zone


@dataclass(frozen=True)
class CronSchedule:
    """A cron expression evaluated on the wall clock of an IANA time zone."""

    expr: str
    tz: str = "UTC"
    dst: DstPolicy = field(default_factory=DstPolicy)

    def __post_init__(self) -> None:
        parse_expression(self.expr)
        validate_time_zone(self.tz)


@dataclass(frozen=True)
class IntervalSchedule:
    """Fixed-length steps from an anchor: anchor, anchor + every, anchor + 2*every, ...

    Elapsed time, not wall-clock time: a 24h interval stays 24 hours apart across DST changes.
    """

    every: timedelta
    anchor: datetime

    def __post_init__(self) -> None:
        if self.every <= timedelta(0):
            raise ScheduleError("interval", f"interval must be positive, got {self.every}")
        if self.anchor.tzinfo is None or self.anchor.utcoffset() is None:
            raise ScheduleError("interval", "interval anchor must be a timezone-aware datetime")
        object.__setattr__(self, "anchor", self.anchor.astimezone(UTC))


@dataclass(frozen=True)
class OneOffSchedule:
    """A single run at one instant."""

    run_at: datetime

    def __post_init__(self) -> None:
        if self.run_at.tzinfo is None or self.run_at.utcoffset() is None:
            raise ScheduleError("run_at", "run_at must include a time zone offset")
        object.__setattr__(self, "run_at", self.run_at.astimezone(UTC))


Schedule: TypeAlias = CronSchedule | IntervalSchedule | OneOffSchedule


def parse_cron(expr: str, tz: str = "UTC", dst: DstPolicy | None = None) -> CronSchedule:
    """A CronSchedule for user input, with its whitespace normalized.

    Raises ScheduleError for invalid syntax or an expression that can never fire
    (field "schedule"), and for an unknown zone (field "time_zone").
    """
    normalized = parse_expression(expr).text
    return CronSchedule(expr=normalized, tz=validate_time_zone(tz), dst=dst or DstPolicy())
