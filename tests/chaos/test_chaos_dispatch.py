"""Scenarios 2-4: the dispatch path under crashes and SQS's own faults.

2. a claimer dying between any two of its steps (watch, create, send, index next, advance,
   delete), at random, before or after the step's write;
3. SQS messages lost after the execution is written: never sent, or deleted unprocessed;
4. SQS delivering messages twice, and out of order.

Each runs interval jobs second by second under the fault, then healthy seconds, and judges the
history: every occurrence ran, none was dispatched or completed twice.
"""

from __future__ import annotations

import random
from typing import Any, TypeVar

import pytest

from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.models.lanes import LaneMessage, Outgoing
from tests.chaos.conftest import Form, publish
from tests.chaos.sim import Sim, interval_jobs
from tests.support.faults import crash_randomly
from tests.support.history import HistoryChecker, judge


@pytest.fixture(
    params=[(False, False), (True, False), (True, True)],
    ids=["claim-writes", "lease-writes", "cursor"],
)
def write_path(request: pytest.FixtureRequest) -> tuple[bool, bool]:
    """Each scenario here three ways: the execution written by its claim, or by its lease, and
    that with the claim cursor (the seed's profile)."""
    record, cursor = request.param
    return bool(record), bool(cursor)


@pytest.fixture
def record_at_lease(write_path: tuple[bool, bool]) -> bool:
    return write_path[0]


@pytest.fixture
def due_cursor(write_path: tuple[bool, bool]) -> bool:
    return write_path[1]


T = TypeVar("T")

CLAIM_STEPS = {
    "watches": ("add",),
    "executions": ("create",),
    "lanes": ("send",),
    "due": ("put", "put_many", "delete_if_unchanged", "settle"),
    "jobs": ("advance",),
}


class Window:
    """A fault window: on until closed."""

    def __init__(self) -> None:
        self.open = True

    def __call__(self) -> bool:
        return self.open


def test_s2_a_claimer_dying_between_each_pair_of_steps_loses_and_doubles_nothing(
    make_sim: Any,
    checker: HistoryChecker,
    form: Form,
    seed: int,
    report_for: Any,
    record_at_lease: bool,
) -> None:
    sim: Sim = make_sim()
    rng = random.Random(seed)
    interval_jobs(sim, form.pick(3, 10), rng)
    window = Window()
    # A claim that leaves its executions to their leases makes one call fewer an item: the
    # rate is doubled so that crashes still land at several steps in the short form.
    rate = 0.12 if record_at_lease else 0.06

    def crashing(part: T, name: str) -> T:
        return crash_randomly(part, CLAIM_STEPS[name], rng, rate=rate, active=window)

    due = crashing(sim.svc.due, "due")
    # Step 0, the claim's watch list, lives in the due table's store.
    due.watches = crashing(sim.svc.due.watches, "watches")
    parts: list[Any] = [
        crashing(sim.svc.jobs, "jobs"),
        due,
        crashing(sim.svc.executions, "executions"),
        crashing(sim.lanes, "lanes"),
        due.watches,
    ]
    sim.claimer = Claimer(ClaimerSettings.of(sim.svc.settings), *parts[:4])
    sim.run(form.pick(40, 150))
    window.open = False
    fault_end = sim.clock.now()
    sim.settle(30)

    report = judge(
        checker,
        report_for("s2_claimer_crashes"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
        fault_end=fault_end,
    )
    crashes = {k: v for part in parts for k, v in part.crashes.items()}
    report.faults = {"crashes": crashes, "errors": dict(sim.errors)}
    publish(report)

    assert len(crashes) >= 3  # crashes landed at several different steps
    assert report.problems() == []
    assert report.effects_per_occurrence.keys() == {"1"}


def test_s3_messages_lost_after_the_execution_is_written_are_sent_again(
    make_sim: Any, checker: HistoryChecker, form: Form, seed: int, report_for: Any
) -> None:
    rng = random.Random(seed)
    window = Window()
    lost = {"never sent": 0, "deleted unprocessed": 0}

    def lose(_: Outgoing) -> bool:
        drop = window() and rng.random() < 0.2
        lost["never sent"] += drop
        return drop

    def deliver(messages: list[LaneMessage]) -> list[LaneMessage]:
        kept = []
        for message in messages:
            if window() and rng.random() < 0.2:
                lost["deleted unprocessed"] += 1
            else:
                kept.append(message)
        return kept

    sim: Sim = make_sim(lose=lose, deliver=deliver)
    interval_jobs(sim, form.pick(3, 10), rng)
    sim.run(form.pick(40, 150))
    window.open = False
    fault_end = sim.clock.now()
    sim.settle(45)

    report = judge(
        checker,
        report_for("s3_sqs_lost_messages"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
        fault_end=fault_end,
    )
    report.faults = {"lost": lost, "errors": dict(sim.errors)}
    publish(report)

    assert min(lost.values()) > 0
    assert report.problems() == []
    # Once SQS behaves, a lost message costs at most the resend delay and a sweep or two.
    settings = sim.svc.settings
    assert report.recovery_sec is not None
    assert report.recovery_sec <= settings.pending_resend_after_sec + 2 * sim.sweep_every


def test_s4_duplicate_and_reordered_deliveries_run_each_occurrence_once(
    make_sim: Any, checker: HistoryChecker, form: Form, seed: int, report_for: Any
) -> None:
    rng = random.Random(seed)
    duplicated = 0

    def deliver(messages: list[LaneMessage]) -> list[LaneMessage]:
        nonlocal duplicated
        out = []
        for message in messages:
            copies = 1 + (rng.random() < 0.4) + (rng.random() < 0.1)
            duplicated += copies - 1
            out.extend([message] * copies)
        rng.shuffle(out)
        return out

    sim: Sim = make_sim(deliver=deliver)
    interval_jobs(sim, form.pick(4, 12), rng, overlap="allow")
    sim.run(form.pick(40, 150))
    sim.settle(10)

    report = judge(
        checker,
        report_for("s4_sqs_duplicates_out_of_order"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
    )
    stale = [o for o in sim.outcomes if o.detail == "duplicate or stale message"]
    report.faults = {"duplicates_delivered": duplicated, "errors": dict(sim.errors)}
    report.extra = {"duplicates_refused_by_the_lease": len(stale)}
    publish(report)

    assert duplicated > 0
    assert len(stale) >= duplicated  # every extra copy met the lease condition and did nothing
    assert report.problems() == []
    assert report.effects_per_occurrence.keys() == {"1"}
