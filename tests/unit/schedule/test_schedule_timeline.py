"""next_after, occurrences and preview for every kind of schedule, with start and end bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from takt.schedule import (
    IntervalSchedule,
    OneOffSchedule,
    ScheduleError,
    next_after,
    occurrences,
    parse_cron,
    preview,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOURLY = parse_cron("0 * * * *")


def _at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def test_cron_next_is_strictly_after() -> None:
    assert next_after(HOURLY, _at(1)) == _at(2)
    assert next_after(HOURLY, _at(1) - timedelta(microseconds=1)) == _at(1)


def test_results_are_utc_whatever_the_input_offset() -> None:
    tokyo = timezone(timedelta(hours=9))
    result = next_after(HOURLY, _at(0.5).astimezone(tokyo))
    assert result == _at(1)
    assert result is not None and result.tzinfo is UTC


def test_start_at_passes_over_earlier_occurrences() -> None:
    assert next_after(HOURLY, T0, start_at=_at(5)) == _at(5)
    assert next_after(HOURLY, T0, start_at=_at(5.5)) == _at(6)
    assert next_after(HOURLY, _at(7), start_at=_at(5)) == _at(8)


def test_end_at_exhausts_the_schedule() -> None:
    assert next_after(HOURLY, T0, end_at=_at(1)) == _at(1)
    assert next_after(HOURLY, _at(1), end_at=_at(1.5)) is None


def test_one_off_fires_once() -> None:
    once = OneOffSchedule(run_at=_at(3))
    assert next_after(once, T0) == _at(3)
    assert next_after(once, _at(3)) is None
    assert preview(once, T0, 5) == [_at(3)]


def test_one_off_before_start_at_never_fires() -> None:
    assert next_after(OneOffSchedule(run_at=_at(3)), T0, start_at=_at(4)) is None


def test_one_off_is_stored_in_utc() -> None:
    paris = timezone(timedelta(hours=1))
    assert OneOffSchedule(run_at=datetime(2026, 1, 1, 1, tzinfo=paris)).run_at == T0


def test_one_off_needs_an_offset() -> None:
    with pytest.raises(ScheduleError) as caught:
        OneOffSchedule(run_at=datetime(2026, 1, 1))
    assert caught.value.field == "run_at"


def test_interval_counts_the_anchor_as_its_first_occurrence() -> None:
    every = IntervalSchedule(every=timedelta(minutes=90), anchor=_at(1))
    assert preview(every, T0, 3) == [_at(1), _at(2.5), _at(4)]


def test_interval_after_its_anchor_continues_the_grid() -> None:
    every = IntervalSchedule(every=timedelta(minutes=90), anchor=_at(1))
    assert next_after(every, _at(1)) == _at(2.5)
    assert next_after(every, _at(100)) == _at(101.5)
    assert next_after(every, _at(100.2)) == _at(101.5)


def test_interval_counts_elapsed_time_across_dst() -> None:
    anchor = datetime(2026, 3, 7, 12, tzinfo=UTC)
    daily = IntervalSchedule(every=timedelta(days=1), anchor=anchor)
    assert preview(daily, anchor, 2) == [anchor + timedelta(days=1), anchor + timedelta(days=2)]


def test_interval_needs_a_positive_length_and_an_aware_anchor() -> None:
    with pytest.raises(ScheduleError, match="positive") as caught:
        IntervalSchedule(every=timedelta(0), anchor=T0)
    assert caught.value.field == "interval"
    with pytest.raises(ScheduleError, match="anchor"):
        IntervalSchedule(every=timedelta(minutes=1), anchor=datetime(2026, 1, 1))


def test_occurrences_lists_the_window_inclusive_of_its_end() -> None:
    assert occurrences(HOURLY, T0, _at(3), limit=10) == [_at(1), _at(2), _at(3)]


def test_occurrences_respects_the_limit() -> None:
    assert occurrences(HOURLY, T0, _at(100), limit=2) == [_at(1), _at(2)]
    assert occurrences(HOURLY, T0, _at(100), limit=0) == []


def test_occurrences_respects_start_and_end() -> None:
    found = occurrences(HOURLY, T0, _at(100), limit=10, start_at=_at(2), end_at=_at(4))
    assert found == [_at(2), _at(3), _at(4)]


def test_preview_stops_when_the_schedule_runs_out() -> None:
    assert preview(HOURLY, T0, 10, end_at=_at(2)) == [_at(1), _at(2)]


@pytest.mark.parametrize("name", ["after", "start_at", "end_at"])
def test_naive_datetimes_are_refused(name: str) -> None:
    arguments = {"after": T0, name: datetime(2026, 1, 1)}
    with pytest.raises(ValueError, match=name):
        next_after(HOURLY, **arguments)


def test_naive_until_is_refused() -> None:
    with pytest.raises(ValueError, match="until"):
        occurrences(HOURLY, T0, datetime(2026, 1, 2), limit=1)


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        occurrences(HOURLY, T0, _at(1), limit=-1)
    with pytest.raises(ValueError, match="count"):
        preview(HOURLY, T0, -1)


def test_nothing_fires_past_the_end_of_the_calendar() -> None:
    last = datetime(9999, 12, 31, 23, 59, tzinfo=UTC)
    assert next_after(parse_cron("* * * * *"), last) is None
    assert next_after(parse_cron("0 0 1 1 *"), datetime(9999, 6, 1, tzinfo=UTC)) is None
    assert next_after(IntervalSchedule(every=timedelta(days=1), anchor=T0), last) is None


def test_inputs_are_not_read_from_a_clock() -> None:
    # Same arguments, same answer: nothing depends on when the call happens.
    assert preview(HOURLY, T0, 3) == preview(HOURLY, T0, 3)
