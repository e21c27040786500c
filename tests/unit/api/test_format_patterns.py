"""The patterns the OpenAPI document gives takt's cron, duration and target formats: every
string the API accepts matches its pattern (so the document never refuses what the API takes),
and the strings the issue found schema-valid but refused ("", "0") no longer match."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from takt.api.models import CRON_PATTERN, DURATION_PATTERN
from takt.models.target_forms import TARGET_PATTERN, check_target
from takt.schedule import ScheduleError, parse_cron, parse_duration

DURATION = re.compile(DURATION_PATTERN)
CRON = re.compile(CRON_PATTERN)
TARGET = re.compile(TARGET_PATTERN)


@given(st.text(alphabet="0123456789dhmswDHMSWPpTt.,x :-", max_size=12))
def test_every_duration_the_api_reads_matches_the_pattern(text: str) -> None:
    try:
        parse_duration(text)
    except ScheduleError:
        return
    assert DURATION.search(text), text


@pytest.mark.parametrize(
    "text", ["90s", "1h30m", "500ms", "2d", "PT1H30M", "p1w", " 1h ", "PT0,5S"]
)
def test_durations_of_each_written_form_match(text: str) -> None:
    parse_duration(text)
    assert DURATION.search(text)


@pytest.mark.parametrize("text", ["", "0", "1x", "h1", "1 h"])
def test_what_is_no_duration_matches_no_pattern_and_is_refused(text: str) -> None:
    with pytest.raises(ScheduleError):
        parse_duration(text)
    assert DURATION.search(text) is None


PREFIXES = ["handler:", "arn:aws:sqs:us-east-1:123456789012:", "http://", "HTTPS://", "{", "", "x"]


@given(
    st.sampled_from(PREFIXES),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789:/.-_{}\"' ", max_size=30),
)
def test_every_target_the_api_accepts_matches_the_pattern(prefix: str, rest: str) -> None:
    text = prefix + rest
    try:
        check_target(text)
    except ValueError:
        return
    assert TARGET.search(text), text


@pytest.mark.parametrize(
    "text",
    [
        "http://127.0.0.1:9/hook",
        "HTTPS://svc.example.com/x",
        "handler:send_report",
        "arn:aws:sns:us-east-1:123456789012:topic",
        '{"type": "http", "url": "https://svc/x", "method": "PUT"}',
    ],
)
def test_targets_of_each_form_match(text: str) -> None:
    check_target(text)
    assert TARGET.search(text)


@pytest.mark.parametrize("text", ["", "0", "svc/hook", "ftp://x/y", "file:///etc/passwd"])
def test_what_is_no_target_matches_no_pattern_and_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        check_target(text)
    assert TARGET.search(text) is None


@given(
    st.lists(
        st.sampled_from(["*", "0", "5", "*/5", "1-5", "mon-fri", "sun-sun", "L", "1,2", "x"]),
        min_size=0,
        max_size=8,
    ),
    st.sampled_from([" ", "  ", "\u00a0", "\u3000"]),
)
def test_every_cron_expression_the_api_reads_matches_the_pattern(
    fields: list[str], space: str
) -> None:
    text = space.join(fields)
    try:
        parse_cron(text)
    except ScheduleError:
        return
    assert CRON.search(text), text


@pytest.mark.parametrize("text", ["*/5 * * * *", "0 6 * * mon-fri", "@hourly", "* * * * * */10"])
def test_cron_expressions_of_each_form_match(text: str) -> None:
    parse_cron(text)
    assert CRON.search(text)


@pytest.mark.parametrize("text", ["", "0", "* * * *", "@", "1 2 3 4 5 6 7"])
def test_what_is_no_cron_expression_matches_no_pattern_and_is_refused(text: str) -> None:
    with pytest.raises(ScheduleError):
        parse_cron(text)
    assert CRON.search(text) is None


@pytest.mark.parametrize("text", ["\t1h", "1h\n", "*\t* * * *", "* * * * *\r", "\x0b@hourly"])
def test_whitespace_the_gate_refuses_is_outside_the_patterns(text: str) -> None:
    """A tab or line break parses (the parsers strip and split on it), but `takt.api.admission`
    refuses control characters in every string outside payloads, so the schema does too.
    (Matched whole, as ECMA-262's `$` reads: Python's also matches before a final newline.)"""
    assert DURATION.fullmatch(text) is None
    assert CRON.fullmatch(text) is None
