"""Time, injected: services take a clock so schedule and lease logic is tested without sleeping."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Protocol


def format_time(instant: datetime) -> str:
    """RFC 3339 in UTC with a Z, to the second, or to the millisecond when it has any: the one
    way takt writes an instant, in the API's answers, the CLI and the schedule's phrases."""
    utc = instant.astimezone(UTC)
    # The year zero-padded by hand: strftime's %Y writes year 1 as "1" on Linux, which no
    # RFC 3339 parser (nor `takt.models.ids.parse_time`) reads back.
    text = f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S}"
    if utc.microsecond // 1000:
        return f"{text}.{utc.microsecond // 1000:03d}Z"
    return f"{text}Z"


def format_local(instant: datetime, zone: tzinfo) -> str:
    """`instant` in `zone` with its offset, to the same precision as `format_time`."""
    local = instant.astimezone(zone)
    return local.isoformat(timespec="milliseconds" if local.microsecond // 1000 else "seconds")


class Clock(Protocol):
    """Something that tells the current instant, always timezone-aware UTC."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock of this function or process."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to, for tests and simulators.

    `monotonic` is the simulated time that has passed (it moves with `advance` and with a `set`
    forward, never back), for a test that drives a worker's own clock too: a worker measures its
    lease on a monotonic clock (`ExecutionRunner(monotonic=...)`), not on its wall clock.
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._elapsed = 0.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._elapsed

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            self._elapsed += max(0.0, seconds)
            return self._now

    def set(self, instant: datetime) -> None:
        with self._lock:
            instant = instant.astimezone(UTC)
            self._elapsed += max(0.0, (instant - self._now).total_seconds())
            self._now = instant


class OffsetClock:
    """A clock that runs ahead of (or behind) another by a fixed offset: injected skew."""

    def __init__(self, base: Clock, offset_sec: float) -> None:
        self._base = base
        self._offset = timedelta(seconds=offset_sec)

    def now(self) -> datetime:
        return self._base.now() + self._offset
