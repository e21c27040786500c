"""The per-second drivers: one claim of each second wins, the claims share the meta item with the
watermark without overwriting it, a duplicate start is refused, and when the driver that has been
sweeping dies (at any step of its second) the other sweeps the next second.

Time is injected: each driver steps at the instants the test chooses, as its loop would on every
whole second; the lane is the observer that says when each job was dispatched.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from functions.scheduler.handler import handler as scheduler_handler
from takt.clock import ManualClock
from takt.config import Settings
from takt.dispatch.claimer import ClaimResult
from takt.dispatch.driver import FOLLOW_AFTER_SEC, MAX_FAILED_TICKS, Driver
from takt.dispatch.ticker import InlineFanout, Ticker
from takt.models.ids import split_execution_id
from takt.wiring import Services, build_services, install
from takt_cli.local.events import LocalContext
from tests.conftest import make_settings
from tests.support.faults import Crash, crash_on
from tests.support.jobs import make_job, store_job
from tests.support.lanes import drain

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SECONDS = 10


@pytest.fixture
def settings(moto_endpoint: str) -> Settings:
    # Nothing claimed ahead of its second: the lane then shows exactly which tick swept what.
    return make_settings(moto_endpoint, dispatch_ahead_sec=0.0)


def _second(n: int) -> datetime:
    return NOON + timedelta(seconds=n, milliseconds=20)


def test_one_claim_of_each_second_wins_and_carries_the_watermark(svc: Services) -> None:
    svc.due.advance_watermark(NOON - timedelta(minutes=2))

    first = svc.due.claim_second(_second(3))
    again = svc.due.claim_second(_second(3) + timedelta(milliseconds=500))
    earlier = svc.due.claim_second(_second(2))
    later = svc.due.claim_second(_second(4))

    assert (first.won, again.won, earlier.won, later.won) == (True, False, False, True)
    assert first.watermark == NOON - timedelta(minutes=2)


def test_claims_and_the_watermark_never_overwrite_one_another(svc: Services) -> None:
    assert svc.due.claim_second(_second(1)).watermark is None  # a new deployment

    svc.due.advance_watermark(NOON - timedelta(minutes=1))

    assert not svc.due.claim_second(_second(1)).won
    assert svc.due.claim_second(_second(2)).watermark == NOON - timedelta(minutes=1)
    assert svc.due.watermark() == NOON - timedelta(minutes=1)


def test_a_minute_event_starts_one_driver_however_often_it_is_delivered(svc: Services) -> None:
    assert svc.due.claim_start(NOON)
    assert not svc.due.claim_start(NOON)  # EventBridge's second delivery
    assert not svc.due.claim_start(NOON - timedelta(minutes=1))  # a late, older event
    assert svc.due.claim_start(NOON + timedelta(minutes=1))


def test_a_second_delivery_of_the_minute_event_returns_without_ticking(svc: Services) -> None:
    event = {"time": "2026-03-02T12:00:00Z", "detail-type": "Scheduled Event"}
    install(svc)
    try:
        first = scheduler_handler(event, LocalContext("takt-scheduler", timeout_ms=3000))
        second = scheduler_handler(event, LocalContext("takt-scheduler", timeout_ms=3000))
    finally:
        install(None)

    assert first["seconds"] == 1
    assert second == {"seconds": 0, "ticks": 0, "dispatched": 0}


def _one_off_each_second(svc: Services) -> dict[str, int]:
    """A one-off due on each second 1 to SECONDS-1; job id -> its second."""
    jobs = {}
    for n in range(1, SECONDS):
        due = NOON + timedelta(seconds=n)
        job = make_job(now=NOON, next_run_time=due)
        store_job(svc, job, NOON)
        jobs[job.job_id] = n
    return jobs


def _dispatched(svc: Services) -> list[str]:
    return [split_execution_id(m.execution_id)[0] for m in drain(svc)]


@pytest.mark.parametrize("dies", ["after_claim", "mid_sweep", "after_sweep"])
def test_when_the_sweeping_driver_dies_the_other_sweeps_the_next_second(
    settings: Settings, svc: Services, clock: ManualClock, dies: str
) -> None:
    """Driver A wins every second (it claims first) until it dies at second 4: just after
    claiming it, halfway through its sweep, or just after the sweep. B, which lost every claim
    until then, sweeps second 5, and nothing is dispatched more than a second after its time."""
    jobs = _one_off_each_second(svc)
    svc.due.advance_watermark(NOON - timedelta(minutes=2))
    a, b = svc.driver, build_services(settings, clock).driver
    dying = {
        "after_claim": Driver(svc.due, crash_on(svc.ticker, "tick", when="before"), clock),
        "mid_sweep": Driver(svc.due, _half_sweep(svc), clock),
        "after_sweep": Driver(svc.due, crash_on(svc.ticker, "tick", when="after"), clock),
    }[dies]
    swept_by: dict[int, str] = {}
    dispatched_at: dict[str, int] = {}
    for n in range(SECONDS):
        clock.set(_second(n))
        if n < 4:
            assert a.step(clock.now()) is not None
            swept_by[n] = "a"
        elif n == 4:
            with pytest.raises(Crash):
                dying.step(clock.now())
        if b.step(clock.now()) is not None:
            swept_by[n] = "b"
        for job_id in _dispatched(svc):
            dispatched_at.setdefault(job_id, n)

    assert swept_by == {**dict.fromkeys(range(4), "a"), **dict.fromkeys(range(5, SECONDS), "b")}
    late = {jobs[j]: dispatched_at[j] - jobs[j] for j in jobs}
    assert sorted(late) == list(range(1, SECONDS))  # nothing lost
    assert late[4] == (0 if dies == "after_sweep" else 1)
    assert max(late.values()) <= 1


def _half_sweep(svc: Services) -> Ticker:
    """A ticker whose sweep claims its first partition (the previous minute's first shard) and
    dies on the next: the current minute's partitions are never claimed."""
    calls = 0

    def claim(minute: datetime, shard: int, now: datetime, ways: int | None) -> ClaimResult:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise Crash("mid-sweep")
        return svc.claimer.claim(minute, shard, now, ways)

    return Ticker(svc.due, InlineFanout(claim, 1), 60, timedelta(0))


def _failing_ticker(svc: Services, failures: int) -> Ticker:
    """A ticker whose sweeps of the first `failures` seconds after noon raise (a table
    throttling every call, say)."""

    def claim(minute: datetime, shard: int, now: datetime, ways: int | None) -> ClaimResult:
        if now < NOON + timedelta(seconds=failures):
            raise RuntimeError("throttled")
        return svc.claimer.claim(minute, shard, now, ways)

    return Ticker(svc.due, InlineFanout(claim, 1), 60, timedelta(0))


def _stepping(clock: ManualClock) -> Callable[[float], Any]:
    """`wait` for a driver under a manual clock: time moves by what it waits."""
    return clock.advance


def test_a_failed_tick_is_logged_and_the_loop_goes_on_with_the_next_second(
    svc: Services, clock: ManualClock
) -> None:
    svc.due.advance_watermark(NOON - timedelta(minutes=2))
    driver = Driver(svc.due, _failing_ticker(svc, MAX_FAILED_TICKS - 1), clock)

    result = driver.run(keep_going=lambda: True, wait=_stepping(clock), ticks=MAX_FAILED_TICKS + 2)

    assert (result.seconds, result.ticks) == (MAX_FAILED_TICKS + 2, 3)


def test_a_tick_that_keeps_failing_ends_the_invocation_with_its_error(
    svc: Services, clock: ManualClock
) -> None:
    svc.due.advance_watermark(NOON - timedelta(minutes=2))
    driver = Driver(svc.due, _failing_ticker(svc, MAX_FAILED_TICKS), clock)

    with pytest.raises(RuntimeError, match="throttled"):
        driver.run(keep_going=lambda: True, wait=_stepping(clock), ticks=MAX_FAILED_TICKS + 2)


def test_a_claim_that_cannot_be_written_is_swept_anyway(svc: Services, clock: ManualClock) -> None:
    jobs = _one_off_each_second(svc)
    svc.due.advance_watermark(NOON - timedelta(minutes=2))
    throttled = ClientError(
        {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}},
        "UpdateItem",
    )

    def refuse(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key", {}).get("bucket", {}).get("S", "").startswith("meta#"):
            raise throttled

    events = svc.clients.dynamodb.meta.events
    events.register("provide-client-params.dynamodb.UpdateItem", refuse)
    try:
        clock.set(_second(1))
        tick = svc.driver.step(clock.now())
    finally:
        events.unregister("provide-client-params.dynamodb.UpdateItem", refuse)

    assert tick is not None
    assert _dispatched(svc) == [j for j, n in jobs.items() if n == 1]


def test_the_leader_keeps_claiming_and_a_follower_only_looks(
    settings: Settings, svc: Services, clock: ManualClock
) -> None:
    """Once A has won a second it claims every next one on the second; B looks a little later,
    finds the second taken, and writes nothing: a lost claim would cost a write unit a second."""
    svc.due.advance_watermark(NOON - timedelta(minutes=2))
    other = build_services(settings, clock)
    writes: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        writes.append(params["TableName"])

    other.clients.dynamodb.meta.events.register("provide-client-params.dynamodb.UpdateItem", count)
    won = []
    for n in range(5):
        clock.set(_second(n))
        won.append((svc.driver.step(clock.now()) is not None, other.driver.step(clock.now())))

    assert won == [(True, None)] * 5
    assert (svc.driver.leading, other.driver.leading) == (True, False)
    assert writes == []


def test_a_follower_looks_at_each_second_a_little_after_it_begins(
    svc: Services, clock: ManualClock
) -> None:
    svc.due.advance_watermark(NOON - timedelta(minutes=2))
    for n in range(5):
        assert svc.due.claim_second(NOON + timedelta(seconds=n)).won  # someone else leads
    stepped: list[float] = []

    def wait(seconds: float) -> None:
        clock.advance(seconds)
        stepped.append((clock.now() - NOON).total_seconds())

    result = svc.driver.run(keep_going=lambda: True, wait=wait, ticks=3)

    assert (result.seconds, result.ticks) == (3, 0)
    assert stepped == [1 + FOLLOW_AFTER_SEC, 2 + FOLLOW_AFTER_SEC]


def test_a_sweep_that_runs_past_its_second_is_followed_at_once_not_a_second_later(
    svc: Services, clock: ManualClock
) -> None:
    svc.due.advance_watermark(NOON - timedelta(minutes=2))
    swept: list[datetime] = []

    def slow_claim(minute: datetime, shard: int, now: datetime, _ways: int | None) -> ClaimResult:
        if shard == 0 and minute == NOON:
            swept.append(now)
            clock.advance(1.2)  # a sweep of 1.2 s, as a lone driver's busiest one might take
        return ClaimResult()

    driver = Driver(svc.due, Ticker(svc.due, InlineFanout(slow_claim, 1), 60, timedelta(0)), clock)

    driver.run(keep_going=lambda: True, wait=clock.advance, ticks=3)

    assert [(t - NOON).total_seconds() for t in swept] == [0.0, 1.2, 2.4]
