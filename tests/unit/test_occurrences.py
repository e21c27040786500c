"""The occurrence policy as tables (takt.occurrences): catch-up x overlap x busy slot x calendars x
DST, pure and in milliseconds. Each row names the rule it defends; the claimer's moto tests
(tests/integration/test_dispatch_*.py) check that the claim writes what the policy decided.

Unless a row says otherwise, a job fires every minute on 5 January 2026 (UTC), and the time of an
occurrence is written `HH:MM` (another day: `MM-DD HH:MM`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from takt.models.calendars import Calendar, DailyWindow, Window
from takt.models.records import JobRecord, OverlapPolicy, TaskSpec
from takt.occurrences import (
    MAX_CATCHUP_WINDOW,
    OVERLAP_RULES,
    Decision,
    catchup_horizon,
    claimable_ahead,
    decide,
    overlap_rule,
    plan_firing,
    window_problem,
)

DAY = datetime(2026, 1, 5, tzinfo=UTC)
EARLIEST = datetime.min.replace(tzinfo=UTC)


def t(text: str) -> datetime:
    """`HH:MM[:SS]` on 5 January 2026, or a full RFC 3339 instant."""
    if "T" in text:
        return datetime.fromisoformat(text)
    parts = [int(p) for p in text.split(":")]
    return DAY.replace(hour=parts[0], minute=parts[1], second=parts[2] if len(parts) > 2 else 0)


def job(**fields: Any) -> JobRecord:
    values: dict[str, Any] = {"schedule": "* * * * *", **fields}
    return JobRecord(
        tenant_id="tenant-a",
        job_id="job-1",
        anchor=values.pop("anchor", t("00:00")),
        target="https://svc/hook",
        created_at=DAY,
        updated_at=DAY,
        **values,
    )


def calendar(name: str = "maint", **body: Any) -> Calendar:
    return Calendar(name=name, updated_at=DAY, **body)


MAINT_10_01 = calendar(windows=[Window(start=t("10:01"), end=t("10:01:30"))])
MAINT_10_00 = calendar(windows=[Window(start=t("09:59"), end=t("10:00:30"))])
MAINT_ALL = calendar(windows=[Window(start=t("09:00"), end=t("11:00"))])
# 5 January is a holiday in New York: 03:00 UTC on the 6th is still the 5th there (22:00 EST).
NY_HOLIDAY = calendar("ny", time_zone="America/New_York", holidays=[date(2026, 1, 5)])
NY_NIGHTS = calendar(
    "ny-nights", time_zone="America/New_York", daily=[DailyWindow(start=time(1), end=time(2))]
)
NIGHTS = calendar("nights", daily=[DailyWindow(start=time(10, 2), end=time(10, 3))])
WINDOW_10_01 = "window 2026-01-05T10:01:00+00:00 to 2026-01-05T10:01:30+00:00"
WINDOW_10_00 = "window 2026-01-05T09:59:00+00:00 to 2026-01-05T10:00:30+00:00"


def shown(decision: Decision) -> list[str]:
    """The decision in the order the claim writes it, one line per write."""

    def at(instant: datetime) -> str:
        utc = instant.astimezone(UTC)
        return f"{utc:%H:%M}" if utc.date() == DAY.date() else f"{utc:%m-%d %H:%M}"

    lines = [f"{at(o.scheduled)} skipped {o.reason}" for o in decision.skipped]
    if decision.replaces is not None:
        lines.append(f"stop the holder for {at(decision.replaces.scheduled)}")
    for o in decision.runs:
        lines.append(f"{at(o.scheduled)} {o.state.value}" + (f" {o.reason}" if o.reason else ""))
    return lines


@dataclass(frozen=True)
class Row:
    rule: str
    job: JobRecord
    due: str
    now: str
    decided: list[str]
    busy: bool = False
    calendars: list[Calendar] = field(default_factory=list)


ALL = {"catchup": "all", "catchup_window": "1h"}
ROWS = [
    # Catch-up.
    Row(
        "catchup once: only the latest missed occurrence runs, the others are skipped",
        job(catchup="once"),
        due="10:00",
        now="10:02:30",
        decided=["10:00 skipped catchup=once", "10:01 skipped catchup=once", "10:02 pending"],
    ),
    Row(
        "catchup skip: the latest runs when it is at most the misfire grace (60 s) late",
        job(catchup="skip"),
        due="10:00",
        now="10:02:50",
        decided=["10:00 skipped catchup=skip", "10:01 skipped catchup=skip", "10:02 pending"],
    ),
    Row(
        "catchup skip: the latest runs when it is exactly the misfire grace (60 s) late",
        job(catchup="skip", schedule=None, interval="10m"),
        due="10:00",
        now="10:11:00",
        decided=["10:00 skipped catchup=skip", "10:10 pending"],
    ),
    Row(
        "catchup skip: a second past the misfire grace, the latest is skipped too",
        job(catchup="skip", schedule=None, interval="10m"),
        due="10:00",
        now="10:11:01",
        decided=["10:00 skipped catchup=skip", "10:10 skipped catchup=skip"],
    ),
    Row(
        "catchup skip: nothing runs when even the latest is more than the grace late",
        job(catchup="skip", schedule=None, interval="10m"),
        due="10:00",
        now="10:21:30",
        decided=[
            "10:00 skipped catchup=skip",
            "10:10 skipped catchup=skip",
            "10:20 skipped catchup=skip",
        ],
    ),
    Row(
        "catchup all: every missed occurrence within the window runs",
        job(**ALL),
        due="10:00",
        now="10:02:30",
        decided=["10:00 pending", "10:01 pending", "10:02 pending"],
    ),
    Row(
        "catchup all: missed occurrences older than the window are skipped",
        job(catchup="all", catchup_window="2m"),
        due="10:00",
        now="10:04:30",
        decided=[
            "10:00 skipped catchup=all",
            "10:01 skipped catchup=all",
            "10:02 skipped catchup=all",
            "10:03 pending",
            "10:04 pending",
        ],
    ),
    Row(
        "catchup all: with none inside the window the latest still runs",
        job(catchup="all", catchup_window="1m", schedule=None, interval="10m"),
        due="10:00",
        now="10:25",
        decided=["10:00 skipped catchup=all", "10:10 skipped catchup=all", "10:20 pending"],
    ),
    Row(
        "a one-off job runs however late, whatever its catch-up policy",
        job(catchup="skip", schedule=None, run_at=t("2026-01-02T10:00:00+00:00")),
        due="2026-01-02T10:00:00+00:00",
        now="10:00",
        decided=["01-02 10:00 pending"],
    ),
    # Overlap against the slot.
    Row(
        "overlap allow: a busy slot changes nothing, every occurrence runs",
        job(overlap="allow", **ALL),
        due="10:00",
        now="10:02:30",
        busy=True,
        decided=["10:00 pending", "10:01 pending", "10:02 pending"],
    ),
    Row(
        "overlap skip: with the slot free the occurrence runs",
        job(overlap="skip"),
        due="10:00",
        now="10:00:30",
        decided=["10:00 pending"],
    ),
    Row(
        "overlap skip: with the slot busy the occurrence is skipped",
        job(overlap="skip"),
        due="10:00",
        now="10:00:30",
        busy=True,
        decided=["10:00 skipped overlap=skip"],
    ),
    Row(
        "catchup all with overlap skip: the oldest missed occurrence runs, the rest overlap it",
        job(overlap="skip", **ALL),
        due="10:00",
        now="10:02:30",
        decided=["10:00 pending", "10:01 skipped overlap=skip", "10:02 skipped overlap=skip"],
    ),
    Row(
        "catchup all with overlap skip and the slot busy: every missed occurrence is skipped",
        job(overlap="skip", **ALL),
        due="10:00",
        now="10:02:30",
        busy=True,
        decided=[
            "10:00 skipped overlap=skip",
            "10:01 skipped overlap=skip",
            "10:02 skipped overlap=skip",
        ],
    ),
    Row(
        "overlap queue: the first starts, the later ones of the firing wait queued",
        job(overlap="queue", **ALL),
        due="10:00",
        now="10:02:30",
        decided=["10:00 pending", "10:01 queued", "10:02 queued"],
    ),
    Row(
        "overlap queue: with the slot busy every occurrence waits queued",
        job(overlap="queue", **ALL),
        due="10:00",
        now="10:02:30",
        busy=True,
        decided=["10:00 queued", "10:01 queued", "10:02 queued"],
    ),
    Row(
        "overlap replace: only the newest runs, the older ones are skipped",
        job(overlap="replace", **ALL),
        due="10:00",
        now="10:02:30",
        decided=["10:00 skipped overlap=replace", "10:01 skipped overlap=replace", "10:02 pending"],
    ),
    Row(
        "overlap replace: with the slot busy the newest stops the holder before it starts",
        job(overlap="replace", **ALL),
        due="10:00",
        now="10:02:30",
        busy=True,
        decided=[
            "10:00 skipped overlap=replace",
            "10:01 skipped overlap=replace",
            "stop the holder for 10:02",
            "10:02 pending",
        ],
    ),
    Row(
        "overlap replace: a firing that runs nothing stops no holder",
        job(overlap="replace", catchup="skip", schedule=None, interval="10m"),
        due="10:00",
        now="10:21:30",
        busy=True,
        decided=[
            "10:00 skipped catchup=skip",
            "10:10 skipped catchup=skip",
            "10:20 skipped catchup=skip",
        ],
    ),
    # Calendars.
    Row(
        "calendars: an occurrence inside a window is skipped naming the calendar and window",
        job(**ALL),
        due="10:00",
        now="10:02:30",
        calendars=[MAINT_10_01],
        decided=[f"10:01 skipped calendar maint: {WINDOW_10_01}", "10:00 pending", "10:02 pending"],
    ),
    Row(
        "calendars before overlap skip: the first occurrence outside the calendars takes the slot",
        job(overlap="skip", **ALL),
        due="10:00",
        now="10:02:30",
        calendars=[MAINT_10_00],
        decided=[
            f"10:00 skipped calendar maint: {WINDOW_10_00}",
            "10:01 pending",
            "10:02 skipped overlap=skip",
        ],
    ),
    Row(
        "calendars before overlap replace: a firing the calendars black out stops no holder",
        job(overlap="replace", **ALL),
        due="10:00",
        now="10:02:30",
        busy=True,
        calendars=[MAINT_ALL],
        decided=[
            "10:00 skipped calendar maint: window 2026-01-05T09:00:00+00:00 to "
            "2026-01-05T11:00:00+00:00",
            "10:01 skipped calendar maint: window 2026-01-05T09:00:00+00:00 to "
            "2026-01-05T11:00:00+00:00",
            "10:02 skipped calendar maint: window 2026-01-05T09:00:00+00:00 to "
            "2026-01-05T11:00:00+00:00",
        ],
    ),
    Row(
        "calendars: the first calendar whose window holds the occurrence is named",
        job(),
        due="10:02",
        now="10:02:10",
        calendars=[NIGHTS, MAINT_ALL],
        decided=["10:02 skipped calendar nights: daily window 10:02-10:03"],
    ),
    Row(
        "calendars: a holiday is the calendar's local date, not the UTC date",
        job(schedule="0 3 * * *"),
        due="2026-01-06T03:00:00+00:00",
        now="2026-01-06T03:00:10+00:00",
        calendars=[NY_HOLIDAY],
        decided=["01-06 03:00 skipped calendar ny: holiday 2026-01-05"],
    ),
    # Clock changes (Berlin springs forward on 29 March 2026 at 01:00 UTC, New York falls back on
    # 1 November 2026 at 06:00 UTC).
    Row(
        "DST gap, default run: a fixed time in the gap runs at the jump, and catch-up counts it",
        job(schedule="30 2 * * *", time_zone="Europe/Berlin", **ALL | {"catchup_window": "2d"}),
        due="2026-03-28T01:30:00+00:00",
        now="2026-03-29T01:00:30+00:00",
        decided=["03-28 01:30 pending", "03-29 01:00 pending"],
    ),
    Row(
        "DST gap, skip: the day whose time falls in the gap has no occurrence to catch up",
        job(
            schedule="30 2 * * *",
            time_zone="Europe/Berlin",
            dst={"gap": "skip"},
            **ALL | {"catchup_window": "2d"},
        ),
        due="2026-03-28T01:30:00+00:00",
        now="2026-03-29T01:00:30+00:00",
        decided=["03-28 01:30 pending"],
    ),
    Row(
        "DST overlap twice with catchup once: the second pass is the latest and runs alone",
        job(schedule="30 1 * * *", time_zone="America/New_York", dst={"overlap": "twice"}),
        due="2026-11-01T05:30:00+00:00",
        now="2026-11-01T06:31:00+00:00",
        decided=["11-01 05:30 skipped catchup=once", "11-01 06:30 pending"],
    ),
    Row(
        "DST overlap twice with overlap skip: the second pass overlaps the first and is skipped",
        job(
            schedule="30 1 * * *",
            time_zone="America/New_York",
            dst={"overlap": "twice"},
            overlap="skip",
            **ALL | {"catchup_window": "1d"},
        ),
        due="2026-11-01T05:30:00+00:00",
        now="2026-11-01T06:31:00+00:00",
        decided=["11-01 05:30 pending", "11-01 06:30 skipped overlap=skip"],
    ),
    Row(
        "DST overlap twice inside a daily calendar window: both passes are skipped by wall clock",
        job(
            schedule="30 1 * * *",
            time_zone="America/New_York",
            dst={"overlap": "twice"},
            calendars=["ny-nights"],
            **ALL | {"catchup_window": "1d"},
        ),
        due="2026-11-01T05:30:00+00:00",
        now="2026-11-01T06:31:00+00:00",
        calendars=[NY_NIGHTS],
        decided=[
            "11-01 05:30 skipped calendar ny-nights: daily window 01:00-02:00",
            "11-01 06:30 skipped calendar ny-nights: daily window 01:00-02:00",
        ],
    ),
    Row(
        "DST overlap once: a repeated fixed time has one occurrence, the first pass",
        job(schedule="30 1 * * *", time_zone="America/New_York", **ALL | {"catchup_window": "1d"}),
        due="2026-11-01T05:30:00+00:00",
        now="2026-11-01T06:31:00+00:00",
        decided=["11-01 05:30 pending"],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.rule for row in ROWS])
def test_each_occurrence_rule_decides_its_row(row: Row) -> None:
    plan = plan_firing(row.job, t(row.due), t(row.now))
    decided = shown(decide(row.job, plan, row.busy, row.calendars))
    assert decided == row.decided, f"rule broken: {row.rule}"


def test_every_overlap_policy_the_api_accepts_has_its_rule() -> None:
    assert set(OVERLAP_RULES) == set(get_args(OverlapPolicy)), (
        "rule: each overlap policy a job may name is decided by its own rule in takt.occurrences"
    )
    assert all(OVERLAP_RULES[name].name == name for name in OVERLAP_RULES)


@pytest.mark.parametrize(
    ("policy", "holds_slot", "promotes_queued"),
    [
        ("allow", False, False),
        ("skip", True, False),
        ("queue", True, True),
        ("replace", True, False),
    ],
)
def test_which_overlap_policies_hold_a_slot_and_start_the_queued_run(
    policy: OverlapPolicy, holds_slot: bool, promotes_queued: bool
) -> None:
    rule = overlap_rule(policy)
    assert (rule.holds_slot, rule.promotes_queued) == (holds_slot, promotes_queued), (
        f"rule: overlap {policy} holds a slot {holds_slot}, starts the queued run {promotes_queued}"
    )


@pytest.mark.parametrize(
    ("overlap", "workflow", "ahead"),
    [("allow", False, True), ("allow", True, False), ("skip", False, False)],
)
def test_only_a_plain_job_without_a_slot_is_claimed_ahead_for_the_burst(
    overlap: OverlapPolicy, workflow: bool, ahead: bool
) -> None:
    tasks = [TaskSpec(id="a", target="https://svc/hook")] if workflow else None
    assert claimable_ahead(job(overlap=overlap, tasks=tasks)) is ahead, (
        "rule: an occurrence whose run the claim's instant decides is not claimed ahead"
    )


def test_a_firing_plans_where_its_job_goes_next_across_fall_back() -> None:
    ny = job(schedule="30 1 * * *", time_zone="America/New_York")
    plan = plan_firing(ny, t("2026-11-01T05:30:00+00:00"), t("2026-11-01T05:30:01+00:00"))
    assert plan.next_run == t("2026-11-02T06:30:00+00:00"), (
        "rule: after the first pass of a repeated time the next occurrence is the next day's"
    )


# The defect of issue 28: this job was accepted, then every claim raised OverflowError.
VAST = {"schedule": None, "interval": "1s", "catchup": "all", "catchup_window": "740000d"}


def test_a_catchup_window_past_the_datetime_range_is_clamped_not_overflowed() -> None:
    """The overflow is the defect itself (the claim raised it and parked the job), so it fails
    this test as a broken rule, not as a crash of the test."""
    try:
        plan = plan_firing(job(**VAST), t("10:00:00"), t("10:00:02") + timedelta(milliseconds=500))
    except OverflowError as exc:
        pytest.fail(f"rule: the planner never overflows on a stored catch-up window: {exc}")
    assert plan.run == [t("10:00:00"), t("10:00:01"), t("10:00:02")], (
        "rule: a catch-up window reaching before year 1 reaches back as far as time goes"
    )
    assert plan.next_run == t("10:00:03")


@pytest.mark.parametrize(
    ("now", "window", "horizon"),
    [
        (EARLIEST, "1ms", EARLIEST),
        (EARLIEST + timedelta(days=1), "1d", EARLIEST),
        (EARLIEST + timedelta(days=1), "2d", EARLIEST),
        (t("10:00"), "999999999d", EARLIEST),
        (datetime.max.replace(tzinfo=UTC), "999999999d", EARLIEST),
        (datetime.max.replace(tzinfo=UTC), "1d", datetime.max.replace(tzinfo=UTC) - timedelta(1)),
    ],
)
def test_the_catchup_horizon_is_clamped_at_the_datetime_range(
    now: datetime, window: str, horizon: datetime
) -> None:
    assert catchup_horizon(job(catchup_window=window), now) == horizon, (
        "rule: the planner never overflows on a stored catch-up window"
    )


@settings(max_examples=200, deadline=None)
@given(
    days=st.integers(min_value=1, max_value=999_999_999),
    now=st.datetimes(
        min_value=datetime(1, 1, 1, 0, 0, 5),
        max_value=datetime(9999, 12, 31, 23, 59, 50),
        timezones=st.just(UTC),
    ),
)
def test_no_stored_window_overflows_the_planner_anywhere_in_time(days: int, now: datetime) -> None:
    every_second = job(**VAST | {"catchup_window": f"{days}d"}, anchor=EARLIEST)
    due = now.replace(microsecond=0) - timedelta(seconds=2)
    plan = plan_firing(every_second, due, now)
    assert plan.run[0] == due, "rule: catch-up all runs every missed occurrence in a vast window"
    assert EARLIEST <= catchup_horizon(every_second, now) <= now


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        (VAST, True),
        ({"catchup_window": "366d"}, False),
        ({"catchup_window": "367d"}, True),
        ({"schedule": None, "interval": "1s", "catchup": "all", "catchup_window": "27h"}, False),
        ({"schedule": None, "interval": "1s", "catchup": "all", "catchup_window": "28h"}, True),
        ({"schedule": None, "interval": "1s", "catchup": "once", "catchup_window": "28h"}, False),
        ({"schedule": None, "interval": "1h", "catchup": "all", "catchup_window": "366d"}, False),
    ],
)
def test_a_catchup_window_one_firing_cannot_plan_is_refused(
    fields: dict[str, Any], refused: bool
) -> None:
    problem = window_problem(job(**fields))
    assert (problem is not None) is refused, (
        f"rule: a window is at most {MAX_CATCHUP_WINDOW.days}d and, with catchup all, at most "
        f"the occurrences one firing walks; got {problem!r} for {fields}"
    )
