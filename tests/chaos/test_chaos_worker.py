"""Scenarios 7, 8, 9, 11 and 14: the worker's faults, in process, on a manual clock.

7. a completion racing the watchdog's re-queue of the same execution, in both orders;
8. a worker function that hits its own timeout mid-execution: killed (its message reappears), or
   giving the execution back just before its deadline;
9. clock skew between functions: within the documented margin nothing fires early beyond it and
   no live lease is taken over; minutes of skew may take a live lease over (a duplicate call),
   never complete an execution twice;
11. poison payloads and handlers that always fail, next to healthy jobs;
14. retry delays within the backoff bounds, attempts persisted across a restart of everything.

Stale reports are counted on the wire (`tap`, the recording proxy the simulated functions reach
moto through): the completions DynamoDB refused because the lease had moved on. What the runner
returned (`fenced`) is takt's account of itself, checked besides.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace
from datetime import timedelta
from itertools import pairwise
from typing import Any

import pytest

from takt.clock import ManualClock, OffsetClock
from takt.models.lanes import LaneMessage
from takt.models.records import ExecState, RetryPolicy
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.worker.deadline import HostDeadline
from takt.worker.runner import RunOutcome
from tests.chaos import handlers
from tests.chaos.conftest import Form, publish
from tests.chaos.oracle import WireTap, stale_reports_refused
from tests.chaos.sim import VISIBILITY_SEC, Sim, interval_jobs
from tests.support.faults import interleave
from tests.support.history import Expect, HistoryChecker, judge


class Held:
    """Messages SQS delivered to a worker the test drives by hand."""

    def __init__(self) -> None:
        self.messages: list[LaneMessage] = []

    def __call__(self, messages: list[LaneMessage]) -> list[LaneMessage]:
        self.messages.extend(messages)
        return []


def _one_gated_run(sim: Sim, gate: str) -> tuple[Expect, LaneMessage]:
    """A one-off job whose first attempt holds its call open on `gate`; its message, held."""
    due = sim.clock.now() + timedelta(seconds=2)
    job = sim.add_job(gate=gate, next_run_time=due)
    held = Held()
    sim.deliver = held
    sim.run(3)
    sim.deliver = None
    [message] = held.messages
    return Expect(job.job_id, [due], None), message


def _in_thread(sim: Sim, message: LaneMessage, host: HostDeadline | None = None) -> Any:
    outcome: list[RunOutcome] = []
    thread = threading.Thread(target=lambda: outcome.append(sim.runner.process(message, host=host)))
    thread.start()
    deadline = time.monotonic() + 10
    while not sim.log.read() and time.monotonic() < deadline:
        time.sleep(0.01)  # until the call has started: the handler logged its side effect
    return thread, outcome


def _expire(sim: Sim) -> None:
    settings = sim.svc.settings
    sim.clock.advance(settings.lease_sec + settings.clock_margin_sec + 1)


@pytest.mark.parametrize("order", ["completion-first", "requeue-first"])
def test_s7_completion_racing_the_watchdogs_requeue_completes_once(
    make_sim: Any, tap: WireTap, checker: HistoryChecker, seed: int, report_for: Any, order: str
) -> None:
    sim: Sim = make_sim(tap=tap)
    gate = f"s7-{seed}-{order}"
    expect, message = _one_gated_run(sim, gate)
    thread, outcome = _in_thread(sim, message)
    _expire(sim)  # the lease has expired: the watchdog may re-queue

    def complete() -> None:
        handlers.gate(gate).set()
        thread.join(10)

    svc = sim.svc
    if order == "completion-first":
        # The worker's completion lands between the watchdog's read and its fenced write.
        racing = interleave(svc.executions, "get", complete)
        Watchdog(WatchdogSettings.of(svc.settings), svc.jobs, svc.due, racing, sim.lanes).sweep(
            sim.clock.now()
        )
    else:
        Watchdog(
            WatchdogSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, sim.lanes
        ).sweep(sim.clock.now())
        complete()
    sim.settle(10)

    report = judge(
        checker, report_for(f"s7_completion_races_requeue_{order}"), [expect], sim.log.read()
    )
    report.fenced = stale_reports_refused(tap.writes)
    report.extra = {"first_worker": outcome[0].state}
    publish(report)

    assert report.problems() == []
    if order == "completion-first":
        assert report.fenced == 0, "a completion before the re-queue is the only report"
        assert report.effects_per_occurrence == {"1": 1}
        assert (outcome[0].state, report.takt_fenced) == ("succeeded", 0)  # takt's account
    else:
        assert report.fenced == 1, "the completion after the re-queue is refused on the wire"
        assert report.effects_per_occurrence == {"2": 1}  # a duplicate call, one completion
        assert (outcome[0].state, report.takt_fenced) == ("fenced", 1)  # takt's account


def test_s8_a_worker_killed_by_its_own_timeout_mid_call_is_retried_once(
    make_sim: Any, tap: WireTap, checker: HistoryChecker, seed: int, report_for: Any
) -> None:
    sim: Sim = make_sim(tap=tap)
    gate = f"s8-killed-{seed}"
    expect, message = _one_gated_run(sim, gate)
    killed_at = sim.clock.now()
    thread, _ = _in_thread(sim, message)  # this invocation is killed: it never reports
    sim.inbox.append((sim.clock.now() + timedelta(seconds=VISIBILITY_SEC), message))
    sim.settle(40)
    handlers.gate(gate).set()  # the frozen call ends long after; its report must not count
    thread.join(10)

    report = judge(
        checker,
        report_for("s8_worker_timeout_killed"),
        [expect],
        sim.log.read(),
        fault_end=killed_at,
    )
    # From the kill to the next start (the killed call's own side effect came before it).
    report.recovery_sec = (max(e.at for e in sim.log.read()) - killed_at).total_seconds()
    report.fenced = stale_reports_refused(tap.writes)
    [record] = report_executions(checker, expect)
    publish(report)

    settings = sim.svc.settings
    assert report.problems() == []
    # The frozen call ends after its lease: its worker either stops unreported (its lease over
    # on its own clock) or reports and is refused, depending on how long the run took in real
    # time; either way the table holds the watchdog's expiry and the retry's success only.
    assert report.fenced <= 1
    assert [(a.attempt, a.outcome) for a in record.attempts] == [
        (1, "lease_expired"),
        (2, "succeeded"),
    ], "the killed invocation's late report never lands"
    assert report.effects_per_occurrence == {"2": 1}
    assert report.recovery_sec is not None
    assert (
        report.recovery_sec <= settings.lease_sec + settings.clock_margin_sec + 2 * sim.sweep_every
    )


def test_s8_a_worker_near_its_timeout_gives_the_execution_back_without_using_an_attempt(
    make_sim: Any, checker: HistoryChecker, seed: int, report_for: Any
) -> None:
    sim: Sim = make_sim()
    gate = f"s8-give-back-{seed}"
    expect, message = _one_gated_run(sim, gate)
    thread, outcome = _in_thread(sim, message, HostDeadline.after(0.3))
    thread.join(10)
    handlers.gate(gate).set()
    sim.settle(5)

    report = judge(checker, report_for("s8_worker_timeout_gives_back"), [expect], sim.log.read())
    [record] = report_executions(checker, expect)
    publish(report)

    assert outcome[0].state == "given_back"
    assert report.problems() == []
    assert [(a.attempt, a.outcome) for a in record.attempts] == [
        (1, "given_back"),
        (1, "succeeded"),
    ]


def report_executions(checker: HistoryChecker, expect: Expect) -> list[Any]:
    return checker.executions(expect.tenant_id, expect.job_id)


def test_s9_skew_within_the_margin_fires_nothing_early_beyond_it(
    make_sim: Any,
    tap: WireTap,
    clock: ManualClock,
    checker: HistoryChecker,
    form: Form,
    seed: int,
    report_for: Any,
) -> None:
    rng = random.Random(seed)
    margin = 2.0
    ahead, behind = OffsetClock(clock, margin * 0.75), OffsetClock(clock, -margin * 0.75)
    sim: Sim = make_sim(tap=tap, claimer_clock=ahead, worker_clock=ahead, watchdog_clock=behind)
    interval_jobs(sim, form.pick(3, 10), rng)
    sim.run(form.pick(30, 150))
    sim.settle(10)

    report = judge(
        checker,
        report_for("s9_clock_skew_within_margin"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
    )
    early = [r for r in sim.outcomes if r.lag_ms is not None and r.lag_ms < 0]
    report.fenced = stale_reports_refused(tap.writes)
    report.extra = {
        "skew_sec": margin * 0.75,
        "earliest_start_sec": min(
            (r.lag_ms / 1000 for r in sim.outcomes if r.lag_ms is not None), default=0.0
        ),
    }
    publish(report)

    assert report.problems() == []
    assert report.lateness_sec["p50"] >= -sim.svc.settings.clock_margin_sec
    assert min(report.lateness_sec.values()) >= -sim.svc.settings.clock_margin_sec
    assert report.fenced == 0, "within the margin no live lease is taken over: none refused"
    assert early == []  # takt's account: by its own clock, no worker started anything early


@pytest.mark.parametrize("skew_sec", [60, 300])
def test_s9_minutes_of_skew_may_call_twice_but_never_complete_twice(
    make_sim: Any,
    tap: WireTap,
    clock: ManualClock,
    checker: HistoryChecker,
    seed: int,
    report_for: Any,
    skew_sec: int,
) -> None:
    # The worker's clock is minutes slow: its lease looks expired to the watchdog at once.
    sim: Sim = make_sim(tap=tap, worker_clock=OffsetClock(clock, -skew_sec))
    gate = f"s9-{seed}-{skew_sec}"
    due = sim.clock.now() + timedelta(seconds=2)
    job = sim.add_job(gate=gate, next_run_time=due)
    held = Held()
    sim.deliver = held
    sim.run(3)
    sim.deliver = None
    [message] = held.messages  # the slow worker takes it (its early wait is not simulated)
    thread, outcome = _in_thread(sim, message)
    sim.clock.advance(sim.svc.settings.clock_margin_sec + 1)
    sim.sweep()  # takes the live lease over: beyond the margin, as documented
    handlers.gate(gate).set()
    thread.join(10)
    sim = replace(sim, worker_clock=clock).restart()  # a worker with a good clock retries it
    sim.settle(10)

    report = judge(
        checker,
        report_for(f"s9_clock_skew_{skew_sec}s"),
        [Expect(job.job_id, [due], None)],
        sim.log.read(),
    )
    report.fenced = stale_reports_refused(tap.writes)
    publish(report)

    assert report.problems() == []
    assert report.fenced == 1, "the slow worker's completion is refused on the wire"
    assert (outcome[0].state, report.takt_fenced) == ("fenced", 1)  # takt's account


def test_s11_poison_payloads_and_failing_handlers_end_dead_and_others_keep_running(
    make_sim: Any, checker: HistoryChecker, form: Form, seed: int, report_for: Any
) -> None:
    rng = random.Random(seed)
    sim: Sim = make_sim()
    retry = RetryPolicy(max_attempts=2, backoff="fixed", initial_interval="1s", jitter="none")
    healthy = interval_jobs(sim, form.pick(2, 6), rng)
    failing = interval_jobs(sim, form.pick(2, 6), rng, fail=True, retry=retry, overlap="allow")
    start = sim.clock.now()
    bodies: list[dict[str, Any]] = [{"log": 5}, {"nothing": "here"}, {"log": [], "fail": "x"}]
    poison = [
        sim.add_job(payload=body, next_run_time=start + timedelta(seconds=2 + i), retry=retry)
        for i, body in enumerate(bodies)
    ]
    sim.run(form.pick(30, 120))
    sim.settle(10)

    expectations = sim.expectations(sim.horizon())
    by_job = {e.job_id: e for e in expectations}
    report = judge(
        checker,
        report_for("s11_poison_and_failing"),
        [by_job[j.job_id] for j in healthy],
        sim.log.read(),
    )
    failed = judge(
        checker,
        report_for("s11_failing_handlers"),
        [by_job[j.job_id] for j in failing],
        sim.log.read(),
        finished=frozenset({ExecState.DEAD}),
    )
    poisoned = [r for j in poison for r in checker.executions(j.tenant_id, j.job_id)]
    report.extra = {
        "failing_occurrences": failed.occurrences,
        "failing_effects_per_occurrence": failed.effects_per_occurrence,
        "poison_executions": {r.execution_id: r.state.value for r in poisoned},
    }
    publish(report)

    assert report.problems() == []
    assert failed.problems() == []
    assert failed.effects_per_occurrence.keys() == {"2"}  # every attempt, then dead
    assert [(r.state, r.attempt) for r in poisoned] == [(ExecState.DEAD, 2)] * 3


def test_s14_retry_delays_stay_within_backoff_and_attempts_survive_a_restart(
    make_sim: Any, checker: HistoryChecker, form: Form, seed: int, report_for: Any
) -> None:
    sim: Sim = make_sim()
    retry = RetryPolicy(max_attempts=form.pick(5, 8), initial_interval="2s", max_interval="20s")
    jobs = [
        sim.add_job(fail=True, retry=retry, next_run_time=sim.clock.now() + timedelta(seconds=2))
        for _ in range(form.pick(2, 6))
    ]
    sim.run(8)
    sim = sim.restart()  # every function and process restarts mid-backoff
    sim.run(form.pick(80, 200))
    sim.settle(5)

    effects = sim.log.read()
    report = judge(
        checker,
        report_for("s14_retry_backoff_and_restart"),
        [Expect(j.job_id, [j.next_run_time], None) for j in jobs if j.next_run_time],
        effects,
        finished=frozenset({ExecState.DEAD}),
    )
    gaps: list[tuple[int, float, float]] = []
    for job in jobs:
        mine = sorted((e for e in effects if e.job_id == job.job_id), key=lambda e: e.at)
        assert [e.attempt for e in mine] == list(range(1, retry.max_attempts + 1))
        for before, after in pairwise(mine):
            ceiling = min(20.0, 2.0 * 2**before.attempt)
            gaps.append((before.attempt, (after.at - before.at).total_seconds(), ceiling))
    report.extra = {"gaps": [{"after_attempt": a, "sec": g, "ceiling": c} for a, g, c in gaps]}
    publish(report)

    assert report.problems() == []
    # The sim's second, the watchdog's sweep and its margin may add to a delay, never cut it.
    slack = 1 + sim.sweep_every + sim.svc.settings.clock_margin_sec
    assert all(0 <= gap <= ceiling + slack for _, gap, ceiling in gaps), gaps
