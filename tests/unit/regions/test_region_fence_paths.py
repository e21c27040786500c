"""The acting paths a region fence guards, on the in-memory tables (tests/support/fakes) with a
fence the test opens and closes: a worker in a fenced region leases nothing and reports nothing,
and a fenced region's watchdog sweeps nothing (issue 27)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.config import Settings
from takt.executions.lifecycle import Lifecycle
from takt.models.calls import CallContext, TargetResult
from takt.models.ids import execution_id
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import ExecState, ExecutionRecord
from takt.models.regions import Fenced
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.support.fakes import FakeDue, FakeExecutions, FakeJobs, FakeLanes
from tests.support.jobs import TENANT, make_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
# How long a test waits, at most, for the runner's threads to do what it polls for.
POLL_SEC = 5.0


class SwitchFence:
    """A region fence that is open (epoch 7) or closed (Fenced), as the test sets it; `refused`
    counts the times it said no."""

    def __init__(self) -> None:
        self.open = True
        self.refused = 0

    def epoch(self) -> int:
        if not self.open:
            self.refused += 1
            raise Fenced("the test closed the fence")
        return 7

    def step(self) -> bool:
        return self.open


class Region:
    """One region's worker and watchdog over shared fakes, behind one fence."""

    def __init__(self, heartbeat_sec: float = 10.0) -> None:
        self.settings = Settings(lease_sec=30.0, clock_margin_sec=2.0, heartbeat_sec=heartbeat_sec)
        self.clock = ManualClock(NOON)
        self.fence = SwitchFence()
        self.jobs = FakeJobs()
        self.executions = FakeExecutions()
        self.lanes = FakeLanes()
        self.lifecycle = Lifecycle(self.settings, self.jobs, self.executions, self.lanes)
        self.calls: list[CallContext] = []
        self.on_call: Callable[[], None] = lambda: None
        self.runner = ExecutionRunner(
            RunnerSettings.of(self.settings),
            self.jobs,
            self.executions,
            self.lanes,
            self,
            self.clock,
            worker_id="w1",
            sleep=self.sleep,
            monotonic=self.clock.monotonic,
            fence=self.fence,
        )
        self.watchdog = Watchdog(
            WatchdogSettings.of(self.settings),
            self.jobs,
            FakeDue(shards=1),
            self.executions,
            self.lanes,
            fence=self.fence,
        )

    def sleep(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def serves(self, handler: str) -> bool:
        return True

    def call(self, target: str, ctx: CallContext) -> TargetResult:
        self.calls.append(ctx)
        self.on_call()
        return TargetResult("success", status_code=200)

    def message(self) -> LaneMessage:
        job = self.jobs.put(make_job(now=NOON, next_run_time=NOON))
        record = ExecutionRecord.for_job(
            job, execution_id(job.job_id, NOON), NOON, ExecState.PENDING, NOON
        )
        assert self.executions.create(record, check_at_ms=self.lifecycle.check_at(NOON))
        return Outgoing.of(record).message

    def state(self, message: LaneMessage) -> tuple[ExecState, int, str | None]:
        record = self.executions.get(TENANT, message.execution_id)
        return (record.state, record.attempt, record.lease_token)


@pytest.fixture
def region() -> Region:
    return Region()


def test_a_worker_in_a_fenced_region_gives_the_message_back_without_a_write(
    region: Region,
) -> None:
    message = region.message()
    region.fence.open = False

    with pytest.raises(Fenced):
        region.runner.process(message)

    assert (region.state(message), region.calls, region.lanes.sent) == (
        (ExecState.PENDING, 1, None),
        [],
        [],
    ), "a fenced region's worker leases nothing, calls nothing and sends nothing"


def test_a_run_whose_region_lost_the_lease_reports_nothing(region: Region) -> None:
    message = region.message()

    def lose_the_lease() -> None:
        region.fence.open = False

    region.on_call = lose_the_lease
    outcome = region.runner.process(message)

    state, attempt, token = region.state(message)
    assert (outcome.state, state, attempt, token is not None, region.jobs.outcomes) == (
        "region_fenced",
        ExecState.RUNNING,
        1,
        True,
        [],
    ), "a run that ends once its region is fenced writes no completion; its lease runs out"


def _within_deadline(done: Callable[[], bool]) -> bool:
    """Whether `done()` came true within POLL_SEC (polled, never a fixed wait)."""
    deadline = time.monotonic() + POLL_SEC
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_run_whose_region_is_fenced_stops_heartbeating() -> None:
    """Heartbeats every 20 ms of real time (the supervisor's beat clock): the call waits for
    one beat written, closes the fence, and waits until two more beats were refused by it."""
    beating = Region(heartbeat_sec=0.02)
    message = beating.message()
    seqs: list[int] = []

    def seq() -> int:
        return beating.executions.get(TENANT, message.execution_id).heartbeat_seq

    def fenced_mid_run() -> None:
        _within_deadline(lambda: seq() > 0)
        seqs.append(seq())
        beating.fence.open = False
        _within_deadline(lambda: beating.fence.refused >= 2)
        seqs.append(seq())

    beating.on_call = fenced_mid_run
    outcome = beating.runner.process(message)

    assert (outcome.state, seqs[0] > 0, seqs[1]) == ("region_fenced", True, seqs[0]), (
        "a region that lost the region lease extends no lease: its heartbeats write nothing"
    )


def test_a_fenced_region_s_watchdog_takes_back_no_expired_lease(region: Region) -> None:
    message = region.message()
    region.lifecycle.lease(message, "w-dead", NOON)
    late = NOON + timedelta(minutes=5)
    region.fence.open = False

    fenced = region.watchdog.sweep(late)
    still = region.state(message)
    region.fence.open = True
    acting = region.watchdog.sweep(late)

    assert (fenced.fenced, fenced.lease_expired, still[0]) == (True, 0, ExecState.RUNNING), (
        "a region that does not hold the region lease sweeps nothing"
    )
    assert (acting.lease_expired, region.state(message)[:2]) == (1, (ExecState.PENDING, 2)), (
        "the holder's watchdog takes the expired lease back"
    )
