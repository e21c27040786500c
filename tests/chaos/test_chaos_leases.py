"""Scenario 16: the lease, fence, watchdog and clock rules, each race played out on purpose, judged
by the oracle alone (tests/chaos/oracle.py).

Each case drives the real claimer, workers and watchdog by hand on a manual clock, as separate
actors with their own clients, against a real HTTP target and the real SQS lanes, and puts one
race exactly where a rule has to hold:

- `heartbeat-between-read-and-reclaim`: a worker's heartbeat lands between the watchdog's read
  of an expired lease and its reclaim;
- `worker-behind-within-margin`: a worker whose clock is 1.5 s behind (the margin is 2 s) is
  still inside its lease when the watchdog looks;
- `worker-minutes-behind-reports-late`: a worker a minute behind keeps calling after the
  watchdog gave its execution to another worker, then reports;
- `stale-copy-during-retry-wait`: SQS delivers the failed attempt's message again while the
  execution waits for its retry;
- `copy-while-running`: SQS delivers a running execution's message to a second worker;
- `call-outlasts-the-resend-wait`: a call longer than the watchdog's resend wait, its lease
  renewed;
- `claimed-ahead`: a message claimed seconds before its time reaches a worker at once.

The verdicts: no lease taken over while its holder's own clock says it is live (beyond-margin
skew excepted), exactly one accepted completion per execution and from the lease holder, no call
earlier than the margin, no retry before its backoff, and every occurrence reached its target.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from takt.aws import AwsClients
from takt.clock import ManualClock
from takt.models.ids import to_ms
from takt.models.records import RetryPolicy
from takt.store.executions import Transition, lease_fence
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.worker.runner import ExecutionRunner, RunOutcome
from tests.chaos.conftest import publish
from tests.chaos.oracle import Call, Expectation, WireTap, Witness
from tests.chaos.rig import Received, Rig
from tests.support.env import fresh_settings
from tests.support.faults import interleave
from tests.support.receiver import Reply
from tests.support.threads import in_thread, poll_until


@pytest.fixture(params=[False, True], ids=["claim-writes", "lease-writes"])
def record_at_lease(request: pytest.FixtureRequest) -> bool:
    """Each scenario here both ways: the execution written by its claim, or by its lease."""
    return bool(request.param)


MARGIN = 2.0
LEASE = 10.0


class Gates:
    """The witness's plan: an execution's first call waits on a gate the case opens; a call
    listed in `fail` answers 500."""

    def __init__(self) -> None:
        self.hold: dict[int, threading.Event] = {}
        self.fail_first = False

    def __call__(self, call: Call, before: int) -> Reply:
        if self.fail_first and before == 0:
            return Reply(status=500)
        gate = self.hold.get(before)
        return Reply(gate=gate) if gate is not None else Reply()

    def held(self, nth: int) -> threading.Event:
        return self.hold.setdefault(nth, threading.Event())


@dataclass
class Case:
    rig: Rig
    clock: ManualClock
    gates: Gates
    job_id: str = ""
    due: datetime | None = None

    def one_off(self, in_sec: float = 2.0, **fields: Any) -> list[Received]:
        """A one-off due `in_sec` from now, claimed at its time; its message as received."""
        due = self.clock.now() + timedelta(seconds=in_sec)
        job = self.rig.add_job(due, **fields)
        self.job_id, self.due = job.job_id, due
        ahead = self.rig.settings.dispatch_ahead_sec
        self.clock.set(due - timedelta(seconds=ahead))
        self.rig.ticker().tick(self.clock.now())
        received = self.rig.receive()
        assert len(received) == 1
        return received

    def run(
        self, worker: ExecutionRunner, received: Received
    ) -> tuple[threading.Thread, list[RunOutcome]]:
        return in_thread(lambda: worker.process(received.message))

    def calls(self, count: int) -> None:
        poll_until(lambda: len(self.rig.witness.calls) >= count, f"{count} target calls")

    def sweep(self, offset_sec: float = 0.0) -> None:
        watchdog, svc = self.rig.watchdog(offset_sec)
        watchdog.sweep(svc.clock.now())

    def expectation(self, **fields: Any) -> Expectation:
        assert self.due is not None
        return Expectation(self.job_id, [self.due], **fields)


@pytest.fixture
def case(
    moto_endpoint: str, clients: AwsClients, clock: ManualClock, request: pytest.FixtureRequest
) -> Iterator[Case]:
    overrides = getattr(request, "param", {})
    values: dict[str, Any] = {
        "due_shards": 1,
        "open_shards": 1,
        "lease_sec": LEASE,
        "heartbeat_sec": 60.0,
        "clock_margin_sec": MARGIN,
        "pending_resend_after_sec": 15.0,
        "dispatch_ahead_sec": 0.0,
    }
    settings = fresh_settings(clients, moto_endpoint, **(values | overrides))
    gates = Gates()
    tap = WireTap(moto_endpoint, clock, settings.executions_table)
    with Witness(clock, gates) as witness:
        try:
            yield Case(Rig(settings, clock, tap, witness, clients), clock, gates)
        finally:
            for gate in gates.hold.values():
                gate.set()
            tap.close()


def _heartbeat_between_read_and_reclaim(case: Case) -> dict[str, object]:
    [received] = case.one_off()
    worker_a = case.rig.worker("worker-a")
    gate = case.gates.held(0)
    thread, _ = case.run(worker_a, received)
    case.calls(1)
    case.clock.advance(LEASE + MARGIN + 1)  # the lease has expired for the watchdog
    beat = case.rig.services("worker-a").executions

    def heartbeat() -> None:
        # Worker A's heartbeat, written as its runner writes one, lands after the watchdog's read.
        record = case.rig.services("worker-a").executions.get(
            "tenant-a", received.message.execution_id
        )
        expires = to_ms(case.clock.now() + timedelta(seconds=LEASE))
        beat.transition(
            record.tenant_id,
            record.execution_id,
            Transition(
                expect=lease_fence(record),
                set={"lease_expires_at": expires},
                add={"heartbeat_seq": 1},
            ),
        )

    svc = case.rig.services("watchdog")
    racing = interleave(svc.executions, "get", heartbeat)
    Watchdog(WatchdogSettings.of(svc.settings), svc.jobs, svc.due, racing, svc.lanes).sweep(
        case.clock.now()
    )
    gate.set()
    thread.join(10)
    _finish(case)
    return {}


def _worker_behind_within_margin(case: Case) -> dict[str, object]:
    [received] = case.one_off()
    worker_a = case.rig.worker("worker-a", offset_sec=-1.5)
    gate = case.gates.held(0)
    thread, _ = case.run(worker_a, received)
    case.calls(1)
    # 9 s in: 1 s of lease left on the worker's clock, 0.5 s past it on the watchdog's.
    case.clock.advance(LEASE - 1)
    case.sweep()
    gate.set()
    thread.join(10)
    _finish(case)
    return {"worker_offset_sec": -1.5}


def _worker_minutes_behind_reports_late(case: Case) -> dict[str, object]:
    [received] = case.one_off()
    worker_a = case.rig.worker("worker-a", offset_sec=-60)
    first = case.gates.held(0)
    second = case.gates.held(1)
    thread_a, _ = case.run(worker_a, received)
    case.calls(1)
    case.clock.advance(1)
    case.sweep()  # A's lease looks a minute old: the next attempt goes out
    again = case.rig.receive()
    worker_b = case.rig.worker("worker-b")
    thread_b = None
    for item in again:
        if item.message.attempt == 2:
            thread_b, _ = case.run(worker_b, item)
    assert thread_b is not None
    case.calls(2)
    first.set()  # A's call answers while B holds the lease: A's report must not count
    thread_a.join(10)
    second.set()
    thread_b.join(10)
    _finish(case)
    return {"worker_offset_sec": -60}


def _stale_copy_during_retry_wait(case: Case) -> dict[str, object]:
    case.gates.fail_first = True
    [received] = case.one_off(
        retry=RetryPolicy(max_attempts=3, backoff="fixed", initial_interval="30s", jitter="none")
    )
    worker_a = case.rig.worker("worker-a")
    worker_a.process(received.message)  # 500: retry_wait, attempt 2 in 30 s
    case.rig.delete(received)
    case.clock.advance(1)
    case.rig.duplicate(received)
    [copy] = [r for r in case.rig.receive() if r.message.attempt == 1]
    case.rig.worker("worker-b").process(copy.message)
    case.rig.delete(copy)
    # The retry is due and its message (delayed in real seconds on moto) has not come: the
    # watchdog sends it.
    case.clock.advance(30 + case.rig.settings.pending_resend_after_sec + MARGIN)
    case.sweep()
    _finish(case)
    return {"retry_fixed_sec": 30}


def _copy_while_running(case: Case) -> dict[str, object]:
    [received] = case.one_off()
    gate = case.gates.held(0)
    thread, _ = case.run(case.rig.worker("worker-a"), received)
    case.calls(1)
    case.rig.duplicate(received)
    copies = case.rig.receive()
    second = case.gates.held(1)
    threads = [case.run(case.rig.worker("worker-b"), copy)[0] for copy in copies]
    for copy_thread in threads:
        copy_thread.join(2)
    second.set()
    gate.set()
    thread.join(10)
    for copy_thread in threads:
        copy_thread.join(10)
    _finish(case)
    return {}


def _call_outlasts_the_resend_wait(case: Case) -> dict[str, object]:
    [received] = case.one_off()
    gate = case.gates.held(0)
    thread, _ = case.run(case.rig.worker("worker-a"), received)
    case.calls(1)
    # Past the resend wait and the margin, well inside the (20 s) lease.
    case.clock.advance(8)
    case.sweep()
    gate.set()
    thread.join(10)
    _finish(case)
    return {}


def _claimed_ahead(case: Case) -> dict[str, object]:
    [received] = case.one_off(in_sec=10)
    # The worker's wait for the message's time passes on the manual clock.
    worker = case.rig.worker(
        "worker-a", sleep=lambda sec: case.clock.set(case.clock.now() + timedelta(seconds=sec))
    )
    worker.process(received.message)
    _finish(case)
    return {"dispatch_ahead_sec": case.rig.settings.dispatch_ahead_sec}


def _finish(case: Case) -> None:
    """Whatever is left on the lane runs on a healthy worker, once each message."""
    worker = case.rig.worker("worker-z")
    for _ in range(3):
        for item in case.rig.receive():
            worker.process(item.message)
            case.rig.delete(item)


CASES: dict[str, tuple[Callable[[Case], dict[str, object]], dict[str, Any], bool]] = {
    # name: (play, settings, whether its skew is beyond the margin)
    "heartbeat-between-read-and-reclaim": (_heartbeat_between_read_and_reclaim, {}, False),
    "worker-behind-within-margin": (_worker_behind_within_margin, {}, False),
    "worker-minutes-behind-reports-late": (_worker_minutes_behind_reports_late, {}, True),
    "stale-copy-during-retry-wait": (_stale_copy_during_retry_wait, {}, False),
    "copy-while-running": (_copy_while_running, {}, False),
    "call-outlasts-the-resend-wait": (
        _call_outlasts_the_resend_wait,
        {"lease_sec": 20.0, "pending_resend_after_sec": 5.0},
        False,
    ),
    "claimed-ahead": (_claimed_ahead, {"dispatch_ahead_sec": 4.0}, False),
}


@pytest.mark.parametrize("case", [CASES[name][1] for name in CASES], ids=list(CASES), indirect=True)
def test_s16_lease_races_judged_by_the_oracle(
    case: Case, request: pytest.FixtureRequest, report_for: Any
) -> None:
    name = request.node.callspec.id
    play, _, beyond_margin = CASES[name]
    extra = play(case)
    retry = extra.get("retry_fixed_sec")
    report = report_for(f"s16_lease_races_{name}")
    verdict = case.rig.judge(
        report, [case.expectation(retry_fixed_sec=float(retry) if isinstance(retry, int) else None)]
    )
    report.extra.update(extra)
    publish(report)

    assert report.problems() == []
    if not beyond_margin:
        assert verdict.live_takeovers == []
    assert verdict.reports_accepted == 1
