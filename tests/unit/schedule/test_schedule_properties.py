"""Properties of next_after, preview and intervals across DST zones (hypothesis).

Instants are drawn both anywhere in 2025-2027 and within hours of a zone's DST transitions, where
the interesting cases live. One property compares cron results with a brute-force oracle that walks
every UTC minute and applies the DST rule from DESIGN.md directly, sharing no code with the
library's walk over wall-clock times.
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import pairwise
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from takt.schedule import (
    CronSchedule,
    DstPolicy,
    IntervalSchedule,
    next_after,
    parse_cron,
    preview,
)
from takt.schedule.cron import CronExpression, parse_expression

ZONES = (
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Europe/Berlin",
    "Asia/Kolkata",
    "UTC",
)
FIRST, LAST = datetime(2025, 1, 1, tzinfo=UTC), datetime(2028, 1, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
SETTINGS = settings(max_examples=120, deadline=None)


@cache
def _transitions(tz: str) -> tuple[datetime, ...]:
    """Instants in [FIRST, LAST) where the zone's offset changes, found by scanning half-hours."""
    zone = ZoneInfo(tz)
    found, instant = [], FIRST
    previous = instant.astimezone(zone).utcoffset()
    while instant < LAST:
        instant += timedelta(minutes=30)
        offset = instant.astimezone(zone).utcoffset()
        if offset != previous:
            found.append(instant)
            previous = offset
    return tuple(found)


@st.composite
def instants(draw: st.DrawFn, tz: str) -> datetime:
    """An instant anywhere in the window, or within three hours of one of the zone's transitions."""
    transitions = _transitions(tz)
    near_a_transition = draw(st.booleans())
    if transitions and near_a_transition:
        base = draw(st.sampled_from(transitions))
        offset = draw(st.integers(min_value=-3 * 3600, max_value=3 * 3600))
        micro = draw(st.sampled_from([0, 0, 0, 1, 500_000, 999_999]))
        return base + timedelta(seconds=offset, microseconds=micro)
    span = int((LAST - FIRST).total_seconds())
    return FIRST + timedelta(seconds=draw(st.integers(min_value=0, max_value=span)))


MINUTES = ("0", "30", "*/15", "*", "0,30", "5-10", "*/7", "45", "59")
HOURS = ("*", "0", "1", "2", "3", "1-3", "*/2", "23", "0,12", "2,3", "*/5")
DAYS = ("*", "1", "15", "L", "*/10", "1-7", "30", "4,25")
MONTHS = ("*", "3", "10,11", "*/2", "mar-nov", "4", "10")
WEEKDAYS = ("*", "0", "1-5", "sun", "*/3", "6", "0-6")
SECONDS = (None, "0", "*/20", "30")


@st.composite
def cron_schedules(draw: st.DrawFn, *, with_seconds: bool = True) -> CronSchedule:
    fields = [
        draw(st.sampled_from(choices)) for choices in (MINUTES, HOURS, DAYS, MONTHS, WEEKDAYS)
    ]
    seconds = draw(st.sampled_from(SECONDS)) if with_seconds else None
    expr = " ".join(([seconds] if seconds is not None else []) + fields)
    policy = DstPolicy(
        gap=draw(st.sampled_from(("run", "skip"))), overlap=draw(st.sampled_from(("once", "twice")))
    )
    return parse_cron(expr, draw(st.sampled_from(ZONES)), policy)


@st.composite
def schedule_and_instant(
    draw: st.DrawFn, *, with_seconds: bool = True
) -> tuple[CronSchedule, datetime]:
    schedule = draw(cron_schedules(with_seconds=with_seconds))
    return schedule, draw(instants(schedule.tz))


@SETTINGS
@given(case=schedule_and_instant(), data=st.data())
def test_next_is_after_and_every_instant_before_it_maps_to_it(
    case: tuple[CronSchedule, datetime], data: st.DataObject
) -> None:
    schedule, after = case
    following = next_after(schedule, after)
    assert following is not None
    assert following > after
    assert following.utcoffset() == timedelta(0)
    gap = (following - after) // timedelta(microseconds=1)
    for _ in range(3):
        step = data.draw(st.integers(min_value=0, max_value=gap - 1))
        assert next_after(schedule, after + timedelta(microseconds=step)) == following


@SETTINGS
@given(case=schedule_and_instant())
def test_preview_is_strictly_increasing_and_chains_next_after(
    case: tuple[CronSchedule, datetime],
) -> None:
    schedule, after = case
    runs = preview(schedule, after, 8)
    assert len(runs) == 8
    assert all(earlier < later for earlier, later in pairwise(runs))
    previous = after
    for run in runs:
        assert next_after(schedule, previous) == run
        previous = run


@settings(max_examples=80, deadline=None)
@given(case=schedule_and_instant(with_seconds=False))
def test_cron_agrees_with_a_minute_by_minute_oracle(case: tuple[CronSchedule, datetime]) -> None:
    schedule, after = case
    horizon = after + timedelta(days=2)
    expected = _oracle_next(schedule, after, horizon)
    following = next_after(schedule, after)
    assert following is not None
    if expected is None:
        assert following > horizon
    else:
        assert following == expected


def _oracle_next(schedule: CronSchedule, after: datetime, horizon: datetime) -> datetime | None:
    """The first UTC minute in (after, horizon] at which the DST rule says the job runs."""
    expression = parse_expression(schedule.expr)
    zone = ZoneInfo(schedule.tz)
    follows_clock = schedule.expr.split()[0].startswith("*") or schedule.expr.split()[1].startswith(
        "*"
    )
    instant = after.replace(second=0, microsecond=0)
    while instant <= horizon:
        instant += MINUTE
        if instant > after and _oracle_runs_at(
            expression, schedule.dst, follows_clock, zone, instant
        ):
            return instant
    return None


def _oracle_runs_at(
    expression: CronExpression,
    policy: DstPolicy,
    follows_clock: bool,
    zone: ZoneInfo,
    instant: datetime,
) -> bool:
    local = instant.astimezone(zone)
    wall = local.replace(tzinfo=None)
    repeated_pass = local.fold == 1
    if _matches(expression, wall) and (
        not repeated_pass or follows_clock or policy.overlap == "twice"
    ):
        return True
    before = (instant - MINUTE).astimezone(zone).utcoffset()
    jump = local.utcoffset()
    assert before is not None and jump is not None
    if jump > before and not follows_clock and policy.gap == "run":
        # The clock jumped forward at this instant: the skipped wall times run now.
        skipped = wall - (jump - before)
        while skipped < wall:
            if _matches(expression, skipped):
                return True
            skipped += MINUTE
    return False


def _matches(expression: CronExpression, wall: datetime) -> bool:
    last = calendar.monthrange(wall.year, wall.month)[1]
    day = wall.day in expression.days.values or (expression.last_day and wall.day == last)
    weekday = (wall.weekday() + 1) % 7 in expression.weekdays.values
    days = (day or weekday) if expression.day_or else (day and weekday)
    return (
        wall.minute in expression.minutes.values
        and wall.hour in expression.hours.values
        and wall.month in expression.months.values
        and days
    )


@st.composite
def intervals(draw: st.DrawFn) -> IntervalSchedule:
    every = timedelta(microseconds=draw(st.integers(min_value=1, max_value=10 * 86_400 * 10**6)))
    anchor = draw(instants("UTC")).astimezone(ZoneInfo(draw(st.sampled_from(ZONES))))
    return IntervalSchedule(every=every, anchor=anchor)


@SETTINGS
@given(schedule=intervals(), after=instants("America/New_York"))
def test_interval_occurrences_are_exact_multiples_from_the_anchor(
    schedule: IntervalSchedule, after: datetime
) -> None:
    runs = preview(schedule, after, 5)
    assert len(runs) == 5
    first = runs[0]
    assert first > after
    assert (first - schedule.anchor) % schedule.every == timedelta(0)
    assert first == schedule.anchor or first - schedule.every <= after
    assert all(later - earlier == schedule.every for earlier, later in pairwise(runs))
