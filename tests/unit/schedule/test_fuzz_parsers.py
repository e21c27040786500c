"""Fuzzing the schedule parsers with hypothesis: whatever a user types, the cron and duration
parsers answer with a schedule or a `ScheduleError` naming the field, never another exception,
and what they accept behaves (a duration is positive, a cron's next run is after `after`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from takt.schedule import ScheduleError, next_after, parse_cron, parse_duration

CRON_ATOMS = st.sampled_from(
    ["*", "*/5", "0", "59", "60", "1-5", "5-1", "1,2,3", "MON", "jan", "L", "?", "#", "-1", "7"]
)
CRON_TEXT = st.one_of(
    st.text(max_size=40),
    st.lists(CRON_ATOMS, min_size=1, max_size=7).map(" ".join),
    st.sampled_from(["@hourly", "@daily", "@weekly", "@yearly", "@reboot", "@every 5m"]),
)
DURATION_TEXT = st.one_of(
    st.text(max_size=30),
    st.from_regex(r"-?[0-9]{0,12}(ms|d|h|m|s|w|y|M)?([0-9]{0,6}(h|m|s))?", fullmatch=True),
    st.from_regex(
        r"[Pp]([0-9]{0,9}[YMWDymwd])*(T([0-9]{0,9}([.,][0-9]{0,7})?[HMShms])*)?", fullmatch=True
    ),
)
AFTER = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
)
ZONES = st.sampled_from(["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe"])


@settings(max_examples=100, deadline=None)
@given(CRON_TEXT, ZONES, AFTER)
def test_fuzz_cron_parses_or_names_the_field(expr: str, zone: str, after: datetime) -> None:
    try:
        schedule = parse_cron(expr, zone)
    except ScheduleError as exc:
        assert exc.field in {"schedule", "time_zone"}
        return
    nxt = next_after(schedule, after)
    assert nxt is None or nxt > after


@settings(max_examples=150, deadline=None)
@given(DURATION_TEXT)
def test_fuzz_duration_parses_to_a_positive_length_or_names_the_field(text: str) -> None:
    try:
        length = parse_duration(text)
    except ScheduleError as exc:
        assert exc.field == "interval"
        return
    assert length > timedelta(0)
