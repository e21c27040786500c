"""Named calendars of blackout windows and holidays (Quartz's calendars), per tenant.

A job that names calendars has each occurrence inside one of their windows recorded as skipped,
with the calendar and the window as the reason, instead of run. This module holds the pure rule,
a function of the calendar and an instant; `takt.store.calendars` keeps calendars in the tenants
table, under the tenant's own partition key.

Three kinds of windows, as Quartz's HolidayCalendar, DailyCalendar and a list of absolute
spans would give them:

- `holidays`: whole local dates in the calendar's zone (a holiday is the local day, whatever
  its length on a DST change);
- `daily`: a wall-clock span of every day (or of some weekdays), `22:00`-`06:00` wrapping past
  midnight; matched on the local wall time, so it follows the clock across DST changes;
- `windows`: absolute spans `[start, end)` with offsets.
"""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Literal
from zoneinfo import ZoneInfo

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from takt.models.instants import Instant
from takt.schedule import validate_time_zone

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_WEEKDAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MAX_HOLIDAYS = 1000
MAX_WINDOWS = 500
MAX_DAILY = 50


class Window(BaseModel):
    """An absolute blackout span, `[start, end)`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: Instant
    end: Instant

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class DailyWindow(BaseModel):
    """A wall-clock span of each day (of `days`, when given); `end` at or before `start` wraps
    past midnight, and then `days` names the day it starts on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: time = Field(description='local wall time, "22:00"')
    end: time = Field(description='local wall time, "06:00" (before start: the next day)')
    days: list[Weekday] | None = Field(default=None, description="default: every day")

    def covers(self, local: datetime) -> bool:
        wall = local.time().replace(tzinfo=None)
        weekday = _WEEKDAYS[local.weekday()]
        yesterday = _WEEKDAYS[(local.weekday() - 1) % 7]
        if self.start < self.end:
            return self.start <= wall < self.end and self._on(weekday)
        if wall >= self.start:
            return self._on(weekday)
        return wall < self.end and self._on(yesterday)

    def _on(self, weekday: Weekday) -> bool:
        return self.days is None or weekday in self.days


class CalendarBody(BaseModel):
    """What a calendar holds: its zone and its windows (the API's request body)."""

    model_config = ConfigDict(extra="forbid")

    description: str | None = Field(default=None, max_length=500)
    time_zone: str = Field(default="UTC", description="IANA zone of holidays and daily windows")
    holidays: list[date] = Field(default_factory=list, max_length=MAX_HOLIDAYS)
    daily: list[DailyWindow] = Field(default_factory=list, max_length=MAX_DAILY)
    windows: list[Window] = Field(default_factory=list, max_length=MAX_WINDOWS)

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return validate_time_zone(value)


class CalendarCreate(CalendarBody):
    """A new calendar: its name and what it holds."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")


class Calendar(CalendarBody):
    """A stored calendar: its name, body and version."""

    name: str
    version: int = 1
    updated_at: AwareDatetime


def blackout(calendar: CalendarBody, instant: datetime) -> str | None:
    """Why `instant` falls inside one of the calendar's windows, or None when it does not."""
    local = instant.astimezone(ZoneInfo(calendar.time_zone))
    if local.date() in set(calendar.holidays):
        return f"holiday {local.date().isoformat()}"
    for daily in calendar.daily:
        if daily.covers(local):
            return f"daily window {daily.start:%H:%M}-{daily.end:%H:%M}"
    for window in calendar.windows:
        if window.start <= instant < window.end:
            return f"window {window.start.isoformat()} to {window.end.isoformat()}"
    return None
