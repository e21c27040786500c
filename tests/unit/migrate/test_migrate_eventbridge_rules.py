"""EventBridge Scheduler's own rules, as AWS documents them, held by the import.

- Daylight saving time (Scheduler User Guide, "Schedule types", daylight saving time): "When
  the time shifts forward in Spring, your schedule invocation gets skipped if the cron expression
  falls on a non-existent date and time. When the time shifts back in the Fall, your schedule runs
  only once and doesn't repeat its invocation." The rule names no exception for a `*` hour.
- Rate expressions (EventBridge User Guide, "Rate expressions reference"): "If the value is equal
  to 1, then the unit must be singular. If the value is greater than 1, the unit must be plural.
  For example, rate(1 hours) and rate(5 hour) aren't valid".
- Cron expressions: six fields; one of day-of-month and day-of-week must be `?`; years 1970-2199.

The expected instants below are written from those sentences, in local time, never from takt.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from takt.schedule import CronSchedule, DstPolicy, occurrences
from takt_cli.migrate import eventbridge
from takt_cli.migrate.awscron import to_aws

NOW = datetime(2026, 6, 1, tzinfo=UTC)
QUEUE = "arn:aws:sqs:us-east-1:123456789012:jobs"


def _item(expression: str, zone: str = "UTC", name: str = "s") -> dict[str, Any]:
    return {
        "Name": name,
        "ScheduleExpression": expression,
        "ScheduleExpressionTimezone": zone,
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {"Arn": QUEUE, "RoleArn": "arn:aws:iam::123456789012:role/s"},
    }


def _imported(expression: str, zone: str = "UTC") -> tuple[dict[str, Any] | None, str | None]:
    (item,) = eventbridge.load(json.dumps(_item(expression, zone)), NOW)
    return item.body, item.reason


def _local_runs(expression: str, zone: str, day: str) -> list[str]:
    """The local wall times (HH:MM, with the UTC offset) the imported job runs at on `day`."""
    body, reason = _imported(expression, zone)
    assert body is not None, reason
    tz = ZoneInfo(zone)
    schedule = CronSchedule(body["schedule"], zone, DstPolicy(**body["dst"]))
    start = datetime.fromisoformat(day).replace(tzinfo=tz)
    end = start + timedelta(days=1)
    runs = occurrences(schedule, start - timedelta(seconds=1), end, limit=200)
    return [t.astimezone(tz).strftime("%H:%M%z") for t in runs if t < end]


# (expression, zone, local day, the runs between 00:45 and 03:00 local that AWS's rule gives)
DST_RULES = [
    # New York falls back at 2:00 EDT to 1:00 EST: 1:00-1:59 repeat, and run once.
    (
        "cron(0/30 * * * ? *)",
        "America/New_York",
        "2027-11-07",
        ["01:00-0400", "01:30-0400", "02:00-0500", "02:30-0500"],
    ),
    ("cron(30 1 * * ? *)", "America/New_York", "2027-11-07", ["01:30-0400"]),
    # New York springs forward at 2:00 EST to 3:00 EDT: 2:00-2:59 do not exist, and are skipped.
    ("cron(0/30 * * * ? *)", "America/New_York", "2027-03-14", ["01:00-0500", "01:30-0500"]),
    ("cron(30 2 * * ? *)", "America/New_York", "2027-03-14", []),
    # Berlin falls back at 3:00 CEST to 2:00 CET.
    (
        "cron(15 * * * ? *)",
        "Europe/Berlin",
        "2027-10-31",
        ["01:15+0200", "02:15+0200"],
    ),
    # Lord Howe falls back 30 minutes at 2:00 (+11) to 1:30 (+10:30): 1:30-1:59 run once.
    (
        "cron(0/15 * * * ? *)",
        "Australia/Lord_Howe",
        "2027-04-04",
        [
            "01:00+1100",
            "01:15+1100",
            "01:30+1100",
            "01:45+1100",
            "02:00+1030",
            "02:15+1030",
            "02:30+1030",
            "02:45+1030",
        ],
    ),
    # Lord Howe springs forward at 2:00 (+10:30) to 2:30 (+11): 2:00-2:29 are skipped.
    (
        "cron(0/15 * * * ? *)",
        "Australia/Lord_Howe",
        "2026-10-04",
        [
            "01:00+1030",
            "01:15+1030",
            "01:30+1030",
            "01:45+1030",
            "02:30+1100",
            "02:45+1100",
        ],
    ),
]


@pytest.mark.parametrize(("expression", "zone", "day", "expected"), DST_RULES)
def test_a_repeated_time_runs_once_and_a_skipped_one_not_at_all(
    expression: str, zone: str, day: str, expected: list[str]
) -> None:
    """Rule: EventBridge runs a time that fall-back repeats once, `*` hour included, and skips
    a time that spring-forward skips."""
    runs = _local_runs(expression, zone, day)
    window = [run for run in runs if "00:45" < run[:5] < "03:00"]
    assert window == expected, "EventBridge runs a repeated time once and skips a skipped one"


@pytest.mark.parametrize(
    ("expression", "interval"),
    [
        ("rate(1 minute)", "1m"),
        ("rate(5 minutes)", "5m"),
        ("rate(1 hour)", "1h"),
        ("rate(1 day)", "1d"),
    ],
)
def test_a_rate_in_aws_spelling_imports(expression: str, interval: str) -> None:
    body, reason = _imported(expression)
    assert body is not None and body["interval"] == interval, reason


@pytest.mark.parametrize(
    "expression",
    ["rate(1 minutes)", "rate(2 hour)", "rate(1 hours)", "rate(5 hour)", "rate(3 day)"],
)
def test_a_rate_whose_unit_disagrees_with_its_number_is_refused(expression: str) -> None:
    """Rule: AWS takes the unit in the singular for 1 and in the plural above."""
    body, reason = _imported(expression)
    assert body is None, f"AWS refuses {expression}; the import accepted it"
    assert "singular for 1 and in the plural above" in (reason or ""), reason


@pytest.mark.parametrize("expression", ["cron(0 9 * * MON-FRI *)", "cron(0 9 ? * ? *)"])
def test_a_cron_without_exactly_one_question_mark_day_is_refused(expression: str) -> None:
    """Rule: AWS needs `?` in exactly one of the day fields."""
    body, reason = _imported(expression)
    assert body is None
    assert "exactly one of the day-of-month and day-of-week" in (reason or ""), reason


def test_a_year_outside_aws_range_is_refused_and_the_rest_of_the_file_imports() -> None:
    """Rule: AWS's years are 1970-2199; `cron(0 0 1 1 ? 9999)` is refused in one line and
    the file's other schedules still import."""
    text = json.dumps(
        {
            "Schedules": [
                _item("cron(0 0 1 1 ? 9999)", name="far"),
                _item("cron(0 0 1 1 ? 2199)", name="last"),
            ]
        }
    )
    far, last = eventbridge.load(text, NOW)
    assert far.body is None
    assert far.reason is not None and "outside AWS's range 1970-2199" in far.reason
    assert "\n" not in far.reason
    assert last.body is not None, last.reason
    assert datetime.fromisoformat(last.body["end_at"]).year == 2199


def test_a_star_hour_exports_back_as_aws_spells_it() -> None:
    """The fixed-time spelling the import writes for a `*` field maps back to `*`."""
    body, reason = _imported("cron(*/15 * ? * 2-6 *)")
    assert body is not None, reason
    assert body["schedule"] == "0-59/15 0-23 * * 1-5"
    assert to_aws(body["schedule"]) == "*/15 * ? * 2,3,4,5,6 *"


def test_a_job_that_follows_the_clock_exports_with_a_note_on_the_repeated_hour() -> None:
    job = {
        "id": "job_1",
        "name": "quarters",
        "status": "active",
        "schedule": "*/15 * * * *",
        "time_zone": "Europe/Berlin",
        "target": QUEUE,
        "payload": {},
        "retry": {"max_attempts": 1},
        "dst": {"gap": "skip", "overlap": "once"},
    }
    exported = eventbridge.export(job, None)
    assert exported.item is not None, exported.reason
    assert any("EventBridge runs it once" in note for note in exported.notes), exported.notes


def test_a_rate_may_separate_its_fields_by_any_white_space() -> None:
    """AWS: "two required fields separated by white space"."""
    body, reason = _imported("rate(5  minutes)")
    assert body is not None and body["interval"] == "5m", reason
