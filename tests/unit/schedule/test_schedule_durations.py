"""parse_duration: the interval spellings takt accepts, and the ones it refuses."""

from __future__ import annotations

from datetime import timedelta

import pytest

from takt.schedule import ScheduleError, parse_duration


@pytest.mark.parametrize(
    ("text", "length"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("1h", timedelta(hours=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d", timedelta(days=2)),
        ("500ms", timedelta(milliseconds=500)),
        ("1d2h3m4s5ms", timedelta(days=1, hours=2, minutes=3, seconds=4, milliseconds=5)),
        (" 15m ", timedelta(minutes=15)),
        ("PT1H30M", timedelta(hours=1, minutes=30)),
        ("PT90S", timedelta(seconds=90)),
        ("PT0.5S", timedelta(milliseconds=500)),
        ("PT0,25S", timedelta(milliseconds=250)),
        ("P1D", timedelta(days=1)),
        ("P2DT3H", timedelta(days=2, hours=3)),
        ("P1W", timedelta(weeks=1)),
        ("pt15m", timedelta(minutes=15)),
    ],
)
def test_accepted_spellings(text: str, length: timedelta) -> None:
    assert parse_duration(text) == length


@pytest.mark.parametrize(
    "text",
    [
        "",
        "  ",
        "15",
        "m",
        "1.5h",
        "1 h",
        "15M",
        "1m1h",
        "1h1h",
        "5x",
        "PT",
        "P",
        "P1DT",
        "PT1H1D",
        "fifteen minutes",
        "1e3s",
        "\u0661s",
    ],
)
def test_garbage_is_refused_with_examples(text: str) -> None:
    with pytest.raises(ScheduleError, match="write it like") as caught:
        parse_duration(text)
    assert caught.value.field == "interval"


@pytest.mark.parametrize("text", ["0s", "0ms", "PT0S", "0d0h", "-5m", "-PT5M"])
def test_zero_and_negative_are_refused(text: str) -> None:
    with pytest.raises(ScheduleError, match="must be positive") as caught:
        parse_duration(text)
    assert caught.value.field == "interval"


@pytest.mark.parametrize("text", ["P1Y", "P1M", "P1Y2M3D"])
def test_calendar_units_are_refused_by_name(text: str) -> None:
    with pytest.raises(ScheduleError, match="no fixed length"):
        parse_duration(text)


def test_absurdly_long_intervals_are_refused() -> None:
    with pytest.raises(ScheduleError, match="too long"):
        parse_duration("99999999999d")
