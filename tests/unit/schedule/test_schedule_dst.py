"""The DST rule, case by case, in zones with one-hour and half-hour shifts.

2026 transitions used here:
- America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT -> 01:00 EST
  (06:00Z).
- Europe/London: 2026-03-29 01:00 GMT -> 02:00 BST (01:00Z); 2026-10-25 02:00 BST -> 01:00 GMT
  (01:00Z).
- Australia/Lord_Howe: 2026-10-04 02:00 -> 02:30 (+10:30 -> +11, 15:30Z); 2026-04-05 02:00 -> 01:30
  (+11 -> +10:30, 15:00Z).
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from takt.schedule import DstPolicy, next_after, parse_cron, preview

NEW_YORK = "America/New_York"
LONDON = "Europe/London"
LORD_HOWE = "Australia/Lord_Howe"


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _runs(expr: str, tz: str, after: str, count: int, **policy: str) -> list[str]:
    schedule = parse_cron(expr, tz, DstPolicy(**policy))  # type: ignore[arg-type]
    return [f"{instant:%Y-%m-%dT%H:%M:%S}Z" for instant in preview(schedule, _utc(after), count)]


def _local(instant: str, tz: str) -> str:
    return f"{datetime.fromisoformat(instant).astimezone(ZoneInfo(tz)):%m-%d %H:%M %Z}"


# --- fixed-time jobs in the spring-forward gap ---------------------------------------------------


def test_new_york_gap_runs_once_at_the_jump_by_default() -> None:
    runs = _runs("30 2 * * *", NEW_YORK, "2026-03-07T12:00:00", 2)
    assert runs == ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]
    assert _local(runs[0], NEW_YORK) == "03-08 03:00 EDT"


def test_new_york_gap_skip_lets_the_day_pass() -> None:
    runs = _runs("30 2 * * *", NEW_YORK, "2026-03-07T12:00:00", 2, gap="skip")
    assert runs == ["2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"]


def test_london_gap_runs_once_at_the_jump_by_default() -> None:
    runs = _runs("30 1 * * *", LONDON, "2026-03-28T12:00:00", 2)
    assert runs == ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]
    assert _local(runs[0], LONDON) == "03-29 02:00 BST"


def test_london_gap_skip_lets_the_day_pass() -> None:
    assert _runs("30 1 * * *", LONDON, "2026-03-28T12:00:00", 1, gap="skip") == [
        "2026-03-30T00:30:00Z"
    ]


def test_several_skipped_times_of_one_job_run_once_at_the_jump() -> None:
    # 02:00 and 02:30 both vanish; the jump instant is also 03:00, which the job does not name.
    runs = _runs("0,30 2 * * *", NEW_YORK, "2026-03-07T12:00:00", 2)
    assert runs == ["2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"]


def test_a_skipped_time_and_the_time_after_the_jump_are_one_run() -> None:
    # 02:00 is skipped and 03:00 is the jump itself: one instant, so one run.
    runs = _runs("0 2,3 * * *", NEW_YORK, "2026-03-08T05:00:00", 3)
    assert runs == ["2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T07:00:00Z"]


def test_seconds_field_job_in_the_gap_runs_at_the_jump_itself() -> None:
    assert _runs("15 30 2 * * *", NEW_YORK, "2026-03-07T12:00:00", 1) == ["2026-03-08T07:00:00Z"]


def test_half_hour_gap_in_lord_howe() -> None:
    runs = _runs("15 2 * * *", LORD_HOWE, "2026-10-03T00:00:00", 2)
    assert runs == ["2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]
    assert _local(runs[0], LORD_HOWE) == "10-04 02:30 +11"


# --- fixed-time jobs in the fall-back overlap ----------------------------------------------------


def test_new_york_overlap_runs_once_at_the_first_occurrence_by_default() -> None:
    runs = _runs("30 1 * * *", NEW_YORK, "2026-10-31T12:00:00", 2)
    assert runs == ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
    assert _local(runs[0], NEW_YORK) == "11-01 01:30 EDT"


def test_new_york_overlap_twice_runs_at_both_occurrences() -> None:
    runs = _runs("30 1 * * *", NEW_YORK, "2026-10-31T12:00:00", 3, overlap="twice")
    assert runs == ["2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"]
    assert [_local(run, NEW_YORK) for run in runs[:2]] == ["11-01 01:30 EDT", "11-01 01:30 EST"]


def test_london_overlap_runs_once_by_default() -> None:
    assert _runs("30 1 * * *", LONDON, "2026-10-24T12:00:00", 2) == [
        "2026-10-25T00:30:00Z",
        "2026-10-26T01:30:00Z",
    ]


def test_london_overlap_twice_runs_at_both_occurrences() -> None:
    assert _runs("30 1 * * *", LONDON, "2026-10-24T12:00:00", 3, overlap="twice") == [
        "2026-10-25T00:30:00Z",
        "2026-10-25T01:30:00Z",
        "2026-10-26T01:30:00Z",
    ]


def test_from_inside_the_second_pass_a_once_job_waits_for_tomorrow() -> None:
    # 01:10 EST: the 01:30 run already happened in the first pass.
    assert _runs("30 1 * * *", NEW_YORK, "2026-11-01T06:10:00", 1) == ["2026-11-02T06:30:00Z"]


def test_from_inside_the_second_pass_a_twice_job_runs_again() -> None:
    runs = _runs("30 1 * * *", NEW_YORK, "2026-11-01T06:10:00", 1, overlap="twice")
    assert runs == ["2026-11-01T06:30:00Z"]


def test_from_late_in_the_first_pass_a_twice_job_runs_in_the_second() -> None:
    # 01:45 EDT: 01:30 EDT is past, 01:30 EST is still to come.
    runs = _runs("30 1 * * *", NEW_YORK, "2026-11-01T05:45:00", 1, overlap="twice")
    assert runs == ["2026-11-01T06:30:00Z"]


def test_half_hour_overlap_in_lord_howe() -> None:
    assert _runs("45 1 * * *", LORD_HOWE, "2026-04-04T00:00:00", 2) == [
        "2026-04-04T14:45:00Z",
        "2026-04-05T15:15:00Z",
    ]
    assert _runs("45 1 * * *", LORD_HOWE, "2026-04-04T00:00:00", 2, overlap="twice") == [
        "2026-04-04T14:45:00Z",
        "2026-04-04T15:15:00Z",
    ]


# --- jobs that follow the wall clock --------------------------------------------------------------


@pytest.mark.parametrize("gap", ["run", "skip"])
def test_wildcard_job_skips_times_inside_the_gap_whatever_the_policy(gap: str) -> None:
    runs = _runs("*/30 * * * *", NEW_YORK, "2026-03-08T06:00:00", 3, gap=gap)
    assert [_local(run, NEW_YORK) for run in runs] == [
        "03-08 01:30 EST",
        "03-08 03:00 EDT",
        "03-08 03:30 EDT",
    ]


@pytest.mark.parametrize("overlap", ["once", "twice"])
def test_wildcard_job_runs_in_both_passes_whatever_the_policy(overlap: str) -> None:
    runs = _runs("0 * * * *", NEW_YORK, "2026-11-01T04:30:00", 3, overlap=overlap)
    assert runs == ["2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"]
    assert [_local(run, NEW_YORK) for run in runs] == [
        "11-01 01:00 EDT",
        "11-01 01:00 EST",
        "11-01 02:00 EST",
    ]


def test_wildcard_job_in_the_first_pass_next_is_the_second_pass() -> None:
    # From 01:30 EDT the next top of an hour on the wall clock is 01:00 EST.
    assert _runs("0 * * * *", NEW_YORK, "2026-11-01T05:30:00", 1) == ["2026-11-01T06:00:00Z"]


def test_wildcard_minute_with_fixed_hour_follows_the_clock() -> None:
    # "* 1 * * *" has a wildcard minute: every minute of both 01:00 hours.
    schedule = parse_cron("* 1 * * *", NEW_YORK)
    runs = preview(schedule, _utc("2026-11-01T04:59:00"), 120)
    assert runs[0] == _utc("2026-11-01T05:00:00")
    assert runs[-1] == _utc("2026-11-01T06:59:00")


def test_wildcard_job_in_london_overlap_repeats_the_hour() -> None:
    runs = _runs("0,30 * * * *", LONDON, "2026-10-24T23:45:00", 4)
    assert [_local(run, LONDON) for run in runs] == [
        "10-25 01:00 BST",
        "10-25 01:30 BST",
        "10-25 01:00 GMT",
        "10-25 01:30 GMT",
    ]


def test_zone_without_dst_is_unaffected() -> None:
    assert _runs("30 2 * * *", "Asia/Kolkata", "2026-03-07T00:00:00", 2) == [
        "2026-03-07T21:00:00Z",
        "2026-03-08T21:00:00Z",
    ]


def test_every_second_job_steps_from_the_last_second_before_the_gap_to_the_jump() -> None:
    schedule = parse_cron("* * * * * *", NEW_YORK)
    assert next_after(schedule, _utc("2026-03-08T06:59:59")) == _utc("2026-03-08T07:00:00")
