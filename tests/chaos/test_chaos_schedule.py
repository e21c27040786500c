"""Scenarios 12 and 13: time itself as the fault.

12. a long outage of an every-minute job (hours with no scheduler), then start: each `catchup`
    policy does exactly what it says, every missed occurrence is either run or recorded as
    skipped, and what is sent is what runs (no flood);
13. DST days on a manual clock: a fixed-time job whose local time falls in the spring-forward gap
    runs once, at the jump, and one whose local time happens twice runs once, the first time
    (DESIGN's rule), including Lord Howe's 30-minute shift.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.occurrences import plan_firing
from tests.chaos.conftest import Form, publish
from tests.chaos.sim import Sim
from tests.support.history import Expect, HistoryChecker, judge
from tests.support.jobs import make_job

START = datetime(2026, 3, 2, 12, 0, 30, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
WINDOW = timedelta(minutes=30)


@pytest.mark.parametrize("policy", ["skip", "once", "all"])
def test_s12_a_long_outage_then_start_does_what_each_catchup_policy_says(
    make_sim: Any,
    clock: ManualClock,
    checker: HistoryChecker,
    form: Form,
    report_for: Any,
    policy: str,
) -> None:
    clock.set(START)
    sim: Sim = make_sim()
    first = START + timedelta(seconds=30)
    job = sim.add_job(
        schedule="* * * * *", next_run_time=first, catchup=policy, catchup_window="30m"
    )
    outage = timedelta(hours=form.pick(2, 24))  # 24 h: more than one firing's bound
    back = first + outage + timedelta(seconds=20)  # the scheduler starts again
    clock.set(back)
    sim.run(10)

    missed = [first + k * MINUTE for k in range(int(outage / MINUTE) + 1)]
    latest = missed[-1]
    # `once` and `skip` both run the latest: it is 20 s late, within the misfire grace.
    run = [t for t in missed if t >= back - WINDOW] if policy == "all" else [latest]
    skipped = [t for t in missed if t not in run]
    expect = Expect(job.job_id, run, latest + MINUTE, skipped=skipped)
    report = judge(checker, report_for(f"s12_outage_catchup_{policy}"), [expect], sim.log.read())
    report.faults = {"outage_hours": outage / timedelta(hours=1)}
    report.extra = {"runs": len(run), "skipped": len(skipped), "messages_sent": sim.lanes.sent}
    publish(report)

    assert report.problems() == []
    assert sim.lanes.sent == len(run)  # one message per run: no flood
    assert report.effects_per_occurrence == {"1": len(run)}


@pytest.mark.parametrize("policy", ["skip", "once", "all"])
def test_s12_an_outage_longer_than_one_firings_bound_still_runs_what_the_policy_says(
    policy: str,
) -> None:
    # Found by scenario 12's full form: past 1,000 missed occurrences a firing took the 1,000th
    # for "the latest", so `once` ran an occurrence 7 h old, `skip` ran nothing and `all` ran
    # none of its window, and the 440 after it were neither run nor recorded.
    first = START + timedelta(seconds=30)
    job = make_job(
        now=START,
        next_run_time=first,
        schedule="* * * * *",
        catchup=policy,
        catchup_window="30m",
    )
    back = first + timedelta(hours=24, seconds=20)

    plan = plan_firing(job, first, back)

    latest = first + timedelta(hours=24)
    wanted = [latest - k * MINUTE for k in range(30)][::-1] if policy == "all" else [latest]
    assert plan.run == wanted
    assert len(plan.run) + len(plan.skipped) == 24 * 60 + 1  # every one recorded
    assert plan.next_run == latest + MINUTE


DST_DAYS = [
    # zone, expression, the one instant it runs that day (UTC), the next one (UTC)
    pytest.param(
        "America/New_York",
        "30 2 * * *",
        datetime(2025, 3, 9, 7, 0, tzinfo=UTC),  # 02:30 does not exist: at the jump, 03:00 EDT
        datetime(2025, 3, 10, 6, 30, tzinfo=UTC),
        id="new-york-spring",
    ),
    pytest.param(
        "America/New_York",
        "30 1 * * *",
        datetime(2025, 11, 2, 5, 30, tzinfo=UTC),  # 01:30 EDT, not 01:30 EST an hour later
        datetime(2025, 11, 3, 6, 30, tzinfo=UTC),
        id="new-york-fall",
    ),
    pytest.param(
        "Europe/London",
        "30 1 * * *",
        datetime(2025, 3, 30, 1, 0, tzinfo=UTC),  # at the jump: 02:00 BST
        datetime(2025, 3, 31, 0, 30, tzinfo=UTC),
        id="london-spring",
    ),
    pytest.param(
        "Europe/London",
        "30 1 * * *",
        datetime(2025, 10, 26, 0, 30, tzinfo=UTC),  # 01:30 BST only
        datetime(2025, 10, 27, 1, 30, tzinfo=UTC),
        id="london-fall",
    ),
    pytest.param(
        "Australia/Lord_Howe",
        "15 2 * * *",
        datetime(2025, 10, 4, 15, 30, tzinfo=UTC),  # 02:00 LHST jumps to 02:30 LHDT
        datetime(2025, 10, 5, 15, 15, tzinfo=UTC),
        id="lord-howe-spring",
    ),
    pytest.param(
        "Australia/Lord_Howe",
        "45 1 * * *",
        datetime(2025, 4, 5, 14, 45, tzinfo=UTC),  # 01:45 LHDT, not 01:45 LHST 30 min later
        datetime(2025, 4, 6, 15, 15, tzinfo=UTC),
        id="lord-howe-fall",
    ),
]


@pytest.mark.parametrize(("zone", "expression", "runs_at", "next_at"), DST_DAYS)
def test_s13_a_dst_day_runs_a_fixed_time_job_once_at_the_documented_instant(
    make_sim: Any,
    clock: ManualClock,
    checker: HistoryChecker,
    report_for: Any,
    request: pytest.FixtureRequest,
    zone: str,
    expression: str,
    runs_at: datetime,
    next_at: datetime,
) -> None:
    clock.set(runs_at - timedelta(seconds=10))
    sim: Sim = make_sim()
    job = sim.add_job(schedule=expression, time_zone=zone, next_run_time=runs_at)
    sim.run(20)
    # Through the repeated hour (or the skipped one) and past it: nothing more is due that day.
    sim.run(int(timedelta(hours=1, minutes=10).total_seconds()), step=300)
    sim.settle(2)

    report = judge(
        checker,
        report_for(f"s13_dst_{request.node.callspec.id}"),
        [Expect(job.job_id, [runs_at], next_at)],
        sim.log.read(),
    )
    publish(report)

    assert report.problems() == []
    assert report.effects_per_occurrence == {"1": 1}
    assert report.lateness_sec["max"] <= 1.0
