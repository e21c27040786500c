"""describe(): plain words for common shapes, the expression itself for the rest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from takt.schedule import DstPolicy, IntervalSchedule, OneOffSchedule, describe, parse_cron


@pytest.mark.parametrize(
    ("expr", "tz", "words"),
    [
        ("0 6 * * *", "Europe/Berlin", "at 06:00 every day (Europe/Berlin)"),
        ("@daily", "UTC", "at 00:00 every day (UTC)"),
        ("30 15 6 * * *", "UTC", "at 06:15:30 every day (UTC)"),
        ("0 6,18 * * *", "UTC", "at 06:00 and 18:00 every day (UTC)"),
        ("*/15 * * * *", "UTC", "every 15 minutes (UTC)"),
        ("* * * * *", "UTC", "every minute (UTC)"),
        ("*/10 * * * * *", "UTC", "every 10 seconds (UTC)"),
        ("15 * * * *", "UTC", "every hour at :15 (UTC)"),
        ("0 9-17 * * mon-fri", "UTC", "every hour from 09:00 to 17:00 on Monday to Friday (UTC)"),
        ("0 9 * * 1-5", "America/New_York", "at 09:00 on Monday to Friday (America/New_York)"),
        ("@weekly", "UTC", "at 00:00 on Sunday (UTC)"),
        ("0 0 1,15,L * *", "UTC", "at 00:00 on the 1st, 15th and last day of the month (UTC)"),
        ("0 0 13 * fri", "UTC", "at 00:00 on the 13th of the month or on Friday (UTC)"),
        ("0 0 * 1,7 *", "UTC", "at 00:00 every day in January and July (UTC)"),
    ],
)
def test_common_shapes_read_as_sentences(expr: str, tz: str, words: str) -> None:
    assert describe(parse_cron(expr, tz)) == words


@pytest.mark.parametrize("expr", ["0 16 */2 * sat", "23 0-20/2 * * *", "*/5 9-17 * * 1-5"])
def test_other_shapes_fall_back_to_the_expression(expr: str) -> None:
    assert describe(parse_cron(expr)) == f"on cron schedule {expr!r} (UTC)"


def test_a_non_default_dst_policy_is_mentioned_for_fixed_time_jobs() -> None:
    schedule = parse_cron("30 2 * * *", "America/New_York", DstPolicy(gap="skip", overlap="twice"))
    assert describe(schedule) == (
        "at 02:30 every day (America/New_York; skipped if DST skips its time; "
        "twice if DST repeats its time)"
    )


def test_dst_policy_is_not_mentioned_for_jobs_that_follow_the_clock() -> None:
    schedule = parse_cron("*/5 * * * *", "America/New_York", DstPolicy(gap="skip"))
    assert describe(schedule) == "every 5 minutes (America/New_York)"


def test_intervals_and_one_offs() -> None:
    anchor = datetime(2026, 1, 1, tzinfo=UTC)
    every = IntervalSchedule(every=timedelta(hours=1, minutes=30), anchor=anchor)
    assert describe(every) == "every 1 hour 30 minutes from 2026-01-01T00:00:00Z"
    assert describe(OneOffSchedule(run_at=anchor)) == "once at 2026-01-01T00:00:00Z"
