"""Daylight saving time, decided by takt rather than left to croniter.

Cron matches local wall-clock times; a wall-clock time maps to zero instants (the spring-forward
gap), one, or two (the fall-back overlap). This module finds which case a wall time is in, where the
clock jumped, and which instants a job runs at under the job's `DstPolicy`. The default is Vixie
cron's rule: a job with a fixed minute and hour runs once at the jump for a time in the gap and only
at the first of two repeated times; a job whose minute or hour starts with `*` follows the clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args
from zoneinfo import ZoneInfo

from takt.schedule.exceptions import ScheduleError

GapRule = Literal["run", "skip"]
OverlapRule = Literal["once", "twice"]

_GAP_RULES = get_args(GapRule)
_OVERLAP_RULES = get_args(OverlapRule)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)


@dataclass(frozen=True)
class DstPolicy:
    """What a fixed-time cron job does when the clock jumps.

    `gap="run"` runs a job whose local time was skipped at the instant the clock jumps forward;
    `"skip"` lets that day pass. `overlap="once"` runs a job whose local time occurs twice only the
    first time; `"twice"` runs it both times. Jobs whose minute or hour starts with `*` ignore the
    policy: they follow the wall clock, which is what "every 15 minutes" means to people.
    """

    gap: GapRule = "run"
    overlap: OverlapRule = "once"

    def __post_init__(self) -> None:
        if self.gap not in _GAP_RULES:
            raise ScheduleError("dst", f"unknown DST gap rule {self.gap!r}: use 'run' or 'skip'")
        if self.overlap not in _OVERLAP_RULES:
            raise ScheduleError(
                "dst", f"unknown DST overlap rule {self.overlap!r}: use 'once' or 'twice'"
            )


@dataclass(frozen=True)
class LocalTime:
    """A naive wall-clock time in a zone, with the two instants PEP 495 gives it.

    `early` reads the wall time with the offset in force before a transition (fold=0) and `late`
    with the offset after it (fold=1). They are equal for an ordinary time; `early < late` when the
    time occurs twice; `early > late` when it does not occur at all (the gap lies between them).
    """

    wall: datetime
    zone: ZoneInfo
    early: datetime
    late: datetime

    @classmethod
    def of(cls, wall: datetime, zone: ZoneInfo) -> LocalTime:
        early = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
        late = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
        return cls(wall=wall, zone=zone, early=early, late=late)

    @property
    def skipped(self) -> bool:
        return self.early > self.late

    @property
    def repeated(self) -> bool:
        return self.early < self.late

    def jump(self) -> datetime:
        """The UTC instant at which the clock changed around this wall time (gap or overlap)."""
        return transition_between(min(self.early, self.late), max(self.early, self.late), self.zone)

    def end_of_change(self) -> datetime:
        """The first wall time past the gap or the repeated span this wall time lies in."""
        after_jump = self.jump().astimezone(self.zone).replace(tzinfo=None, fold=0)
        return after_jump + max(self.late - self.early, timedelta(0))

    def instants(self, *, follows_clock: bool, policy: DstPolicy) -> tuple[datetime, ...]:
        """The UTC instants, ascending, at which a job matching this wall time runs.

        `follows_clock` is true for a job whose minute or hour field starts with `*`.
        """
        if self.repeated:
            if follows_clock or policy.overlap == "twice":
                return (self.early, self.late)
            return (self.early,)
        if self.skipped:
            if follows_clock or policy.gap == "skip":
                return ()
            return (self.jump(),)
        return (self.early,)


def transition_between(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
    """The first whole second in (before, after] whose UTC offset in `zone` is that of `after`.

    zoneinfo does not expose its transition table, so this bisects on the offset, which changes
    exactly once between the two instants of a skipped or repeated wall time. Transitions in the tz
    database fall on whole seconds, so the answer is the transition itself.
    """
    target = after.astimezone(zone).utcoffset()
    low = (before - _EPOCH) // _SECOND
    high = -((_EPOCH - after) // _SECOND)
    while high - low > 1:
        middle = (low + high) // 2
        if (_EPOCH + middle * _SECOND).astimezone(zone).utcoffset() == target:
            high = middle
        else:
            low = middle
    return _EPOCH + high * _SECOND
