"""A calendar's blackout rule: holidays, daily wall-clock windows and absolute windows, across
New York's DST changes of 2026 (8 March 2:00 EST -> 3:00 EDT, 1 November 2:00 EDT -> 1:00 EST)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

import pytest

from takt.models.calendars import CalendarBody, DailyWindow, Window, blackout


def _at(hour: int, minute: int = 0, day: int = 1, month: int = 11) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


NIGHT = CalendarBody(
    time_zone="America/New_York", daily=[DailyWindow(start=time(1, 0), end=time(3, 0))]
)


@pytest.mark.parametrize(
    ("instant", "inside"),
    [
        (_at(4, 59), False),  # 00:59 EDT
        (_at(5, 30), True),  # 01:30 EDT, the first pass
        (_at(6, 30), True),  # 01:30 EST, the second pass: the wall clock is inside again
        (_at(7, 59), True),  # 02:59 EST
        (_at(8, 0), False),  # 03:00 EST
    ],
)
def test_a_daily_window_follows_the_wall_clock_through_fall_back(
    instant: datetime, inside: bool
) -> None:
    assert (blackout(NIGHT, instant) is not None) is inside


@pytest.mark.parametrize(
    ("instant", "inside"),
    [
        (_at(6, 0, day=8, month=3), True),  # 01:00 EST
        (_at(6, 59, day=8, month=3), True),  # 01:59 EST
        (_at(7, 0, day=8, month=3), False),  # 03:00 EDT: 2:00-3:00 does not exist that night
    ],
)
def test_a_daily_window_across_spring_forward(instant: datetime, inside: bool) -> None:
    assert (blackout(NIGHT, instant) is not None) is inside


def test_a_window_past_midnight_belongs_to_the_day_it_starts() -> None:
    weekend_nights = CalendarBody(
        time_zone="Europe/Berlin",
        daily=[DailyWindow(start=time(22, 0), end=time(6, 0), days=["fri"])],
    )
    # Friday 4 December 2026, 23:00 CET and Saturday 02:00 CET are inside; Thursday night not.
    assert blackout(weekend_nights, datetime(2026, 12, 4, 22, 0, tzinfo=UTC)) is not None
    assert blackout(weekend_nights, datetime(2026, 12, 5, 1, 0, tzinfo=UTC)) is not None
    assert blackout(weekend_nights, datetime(2026, 12, 4, 1, 0, tzinfo=UTC)) is None


def test_a_holiday_is_the_local_date_of_the_calendars_zone() -> None:
    christmas = CalendarBody(time_zone="Asia/Tokyo", holidays=[date(2026, 12, 25)])
    # 24 December 15:00 UTC is 25 December 00:00 in Tokyo.
    assert blackout(christmas, datetime(2026, 12, 24, 15, 0, tzinfo=UTC)) == "holiday 2026-12-25"
    assert blackout(christmas, datetime(2026, 12, 25, 15, 0, tzinfo=UTC)) is None


def test_an_absolute_window_is_half_open() -> None:
    freeze = CalendarBody(
        windows=[Window(start=_at(0, day=20, month=12), end=_at(0, day=27, month=12))]
    )
    assert blackout(freeze, _at(0, day=20, month=12)) is not None
    assert blackout(freeze, _at(0, day=27, month=12)) is None


def test_a_window_that_ends_before_it_starts_is_refused() -> None:
    with pytest.raises(ValueError, match="after start"):
        Window(start=_at(2), end=_at(1))
