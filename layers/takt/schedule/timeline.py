"""When a schedule fires: pure functions of the schedule and the instants they are given.

Nothing here reads a clock. The scheduler asks "what is the next occurrence strictly after the one
I just handled", so every answer is a deterministic function of its inputs, and the same occurrence
always gets the same instant (which is what makes execution ids deterministic).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from takt.schedule.cron import CronExpression, WallClock, parse_expression
from takt.schedule.dst import DstPolicy, LocalTime
from takt.schedule.model import CronSchedule, IntervalSchedule, OneOffSchedule, Schedule
from takt.schedule.zones import require_aware, zone_of

_MICROSECOND = timedelta(microseconds=1)


def next_after(
    schedule: Schedule,
    after: datetime,
    *,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
) -> datetime | None:
    """The first occurrence strictly after `after`, in UTC, or None when there is none.

    Occurrences before `start_at` are passed over; None when the next one is later than `end_at`
    (or a one-off schedule's instant is not after `after`).
    """
    require_aware(after, "after")
    floor = after.astimezone(UTC)
    if start_at is not None:
        require_aware(start_at, "start_at")
        # "At or after start_at" is "strictly after the microsecond before it".
        floor = max(floor, start_at.astimezone(UTC) - _MICROSECOND)
    if end_at is not None:
        require_aware(end_at, "end_at")
    result = _next_strictly_after(schedule, floor)
    if result is None or (end_at is not None and result > end_at):
        return None
    return result


def occurrences(
    schedule: Schedule,
    after: datetime,
    until: datetime,
    *,
    limit: int,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
) -> list[datetime]:
    """All occurrences in (after, until], oldest first, at most `limit` of them.

    The limit is required: a catch-up after an outage must be bounded, whatever the schedule.
    """
    require_aware(until, "until")
    if limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    found = []
    for instant in islice(_iterate(schedule, after, start_at, end_at), limit):
        if instant > until:
            break
        found.append(instant)
    return found


def preview(
    schedule: Schedule,
    after: datetime,
    count: int,
    *,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
) -> list[datetime]:
    """The next `count` occurrences after `after` (fewer if the schedule runs out)."""
    if count < 0:
        raise ValueError(f"count must not be negative, got {count}")
    return list(islice(_iterate(schedule, after, start_at, end_at), count))


def _iterate(
    schedule: Schedule, after: datetime, start_at: datetime | None, end_at: datetime | None
) -> Iterator[datetime]:
    current: datetime | None = after
    while current is not None:
        current = next_after(schedule, current, start_at=start_at, end_at=end_at)
        if current is not None:
            yield current


def _next_strictly_after(schedule: Schedule, after: datetime) -> datetime | None:
    if isinstance(schedule, OneOffSchedule):
        return schedule.run_at if schedule.run_at > after else None
    if isinstance(schedule, IntervalSchedule):
        return _next_interval(schedule, after)
    return _next_cron(schedule, after)


def _next_interval(schedule: IntervalSchedule, after: datetime) -> datetime | None:
    if schedule.anchor > after:
        return schedule.anchor
    # timedelta // timedelta is exact integer arithmetic on microseconds: no float drift.
    steps = (after - schedule.anchor) // schedule.every + 1
    try:
        return schedule.anchor + steps * schedule.every
    except OverflowError:
        return None


def _next_cron(schedule: CronSchedule, after: datetime) -> datetime | None:
    timeline = _CronTimeline(
        expression=parse_expression(schedule.expr), zone=zone_of(schedule.tz), policy=schedule.dst
    )
    return timeline.next_after(after)


@dataclass(frozen=True)
class _CronTimeline:
    """A cron expression's occurrences in one zone under one DST policy.

    Mapping matching wall times to instants keeps their order except in a fall-back overlap, where
    the second pass over the repeated wall times comes after the first pass over all of them. So
    `next_after` walks wall times forward from the wall time of `after` and stops at the first that
    yields an instant after `after`; when `after` lies in the first pass of an overlap it also
    considers the second pass of the repeated wall times at or before it, which that walk never
    revisits.
    """

    expression: CronExpression
    zone: ZoneInfo
    policy: DstPolicy

    def next_after(self, after: datetime) -> datetime | None:
        local = after.astimezone(self.zone)
        here = LocalTime.of(local.replace(tzinfo=None, fold=0), self.zone)
        found = [self._walk_forward(here.wall, after)]
        if here.repeated and local.fold == 0:
            found.append(self._second_pass_up_to(here))
        return min((instant for instant in found if instant is not None), default=None)

    def _instants(self, local: LocalTime) -> tuple[datetime, ...]:
        return local.instants(follows_clock=self.expression.follows_clock, policy=self.policy)

    def _walk_forward(self, wall: datetime, after: datetime) -> datetime | None:
        walls = WallClock(self.expression, wall)
        while (matched := walls.next()) is not None:
            local = LocalTime.of(matched, self.zone)
            for instant in self._instants(local):
                if instant > after:
                    return instant
            if local.skipped or local.repeated:
                # Every other wall time of this gap or overlap yields nothing after `after` either:
                # resume past it rather than step through it (an every-second job would take
                # 3,600 steps through a one-hour gap).
                walls.skip_to(local.end_of_change() - _MICROSECOND)
        return None

    def _second_pass_up_to(self, here: LocalTime) -> datetime | None:
        """The second-pass instant of the earliest repeated wall time at or before `here`."""
        first_repeated = here.jump().astimezone(self.zone).replace(tzinfo=None, fold=0)
        wall = WallClock(self.expression, first_repeated - _MICROSECOND).next()
        if wall is None or wall > here.wall:
            return None
        instants = self._instants(LocalTime.of(wall, self.zone))
        return instants[-1] if len(instants) == 2 else None
