"""Resting drivers (`takt.dispatch.rest`, the small profile): a driver ends its invocation once
nothing is due before the next minute's driver, and the indexer starts one for a job due sooner,
so a job created meanwhile is not left for the next minute.

Time is injected (`ManualClock`); the driver the indexer starts is a recorded call.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from functions.scheduler.handler import handler as scheduler_handler
from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.clock import ManualClock
from takt.dispatch.indexer import DueIndexer
from takt.dispatch.rest import AWAKE_WITHIN_SEC, Rest, Waker
from takt.dispatch.ticker import TickResult
from takt.store.due import DueStore, minute_of
from takt.wiring import Services, install
from takt.wiring import indexer as wiring_indexer
from takt_cli.local.events import LocalContext
from tests.support.indexer import stream_records

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

TENANT = "tenant-a"
MAX_BUCKETS = 10


@pytest.fixture
def rest(svc: Services, clock: ManualClock) -> Rest:
    # Where an idle deployment's watermark rests: two minutes back (`takt.dispatch.ticker`).
    svc.due.advance_watermark(minute_of(clock.now()) - timedelta(minutes=2))
    return Rest(svc.due, MAX_BUCKETS)


def _watermark(svc: Services) -> datetime | None:
    return svc.due.watermark()


def test_a_driver_rests_when_nothing_is_due_before_the_next_minutes_driver(
    svc: Services, clock: ManualClock, rest: Rest
) -> None:
    svc.due.claim_second(clock.now())
    awake = svc.due.driver_awake(clock.now(), AWAKE_WITHIN_SEC)

    settled = rest.settles(clock.now(), _watermark(svc))

    assert (awake, settled) == (True, True), "idle cost: an empty index lets the driver end"
    assert not svc.due.driver_awake(clock.now(), AWAKE_WITHIN_SEC), (
        "a rested driver is recorded as not awake, so the indexer starts one for a job due soon"
    )


@pytest.mark.parametrize(
    "due_in", [timedelta(seconds=40), timedelta(seconds=95)], ids=["this-minute", "next-minute"]
)
def test_a_driver_keeps_ticking_while_something_is_due_this_minute_or_the_next(
    svc: Services, clock: ManualClock, rest: Rest, due_in: timedelta
) -> None:
    clock.set(minute_of(clock.now()) + timedelta(seconds=5))
    svc.due.put(TENANT, "job-1", clock.now() + due_in, clock.now())

    assert not rest.settles(clock.now(), _watermark(svc)), (
        "rest: an item due before the next minute's driver keeps this one ticking"
    )


def test_a_driver_keeps_ticking_for_an_item_left_in_an_older_minute(
    svc: Services, clock: ManualClock, rest: Rest
) -> None:
    older = minute_of(clock.now()) - timedelta(minutes=1)
    svc.due.put(TENANT, "job-1", older, older)

    assert not rest.settles(clock.now(), _watermark(svc)), (
        "rest: an item the watermark has not passed is still to be claimed"
    )


def test_an_item_put_while_the_driver_records_its_rest_keeps_it_ticking(
    svc: Services, clock: ManualClock, rest: Rest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The indexer's put lands between the driver's first look and its rest: the indexer then
    still sees the driver awake, so only the driver's second look can find the item."""
    record_rest = DueStore.rest
    seen_awake: list[bool] = []

    def put_then_rest(due: DueStore, second: datetime) -> None:
        svc.due.put(TENANT, "job-1", clock.now() + timedelta(seconds=20), clock.now())
        seen_awake.append(svc.due.driver_awake(clock.now(), AWAKE_WITHIN_SEC))
        record_rest(due, second)

    svc.due.claim_second(clock.now())
    monkeypatch.setattr(DueStore, "rest", put_then_rest)

    settled = rest.settles(clock.now(), _watermark(svc))

    assert seen_awake == [True]
    assert not settled, "rest: the driver looks again after recording its rest, and finds the job"


# Where the indexer's put and its read of the drivers fall against the driver's rest: before its
# first look, between that look and the rest's record, between the record and its second look,
# after it. The put comes first (the indexer's program order).
GAPS = ("before-look", "before-record", "before-second-look", "after")
INTERLEAVINGS = [(put, read) for put in range(4) for read in range(put, 4)]


@pytest.mark.parametrize(
    ("put_at", "read_at"),
    INTERLEAVINGS,
    ids=[f"put-{GAPS[put]}-read-{GAPS[read]}" for put, read in INTERLEAVINGS],
)
def test_every_interleaving_of_a_rest_and_a_put_leaves_the_job_a_driver(
    svc: Services,
    clock: ManualClock,
    rest: Rest,
    monkeypatch: pytest.MonkeyPatch,
    put_at: int,
    read_at: int,
) -> None:
    """The driver records its rest and then looks; the indexer puts and then reads. In every
    order of the four steps, either the driver does not rest or the indexer starts a driver."""
    started: list[datetime] = []
    waker = Waker(svc.due, clock, lambda: started.append(clock.now()))
    due = clock.now() + timedelta(seconds=20)
    steps: dict[int, list[Callable[[], object]]] = {
        put_at: [lambda: svc.due.put(TENANT, "job-1", due, clock.now())],
    }
    steps.setdefault(read_at, []).append(lambda: waker.indexed(due))

    def run(gap: int) -> None:
        for step in steps.get(gap, []):
            step()

    record_rest = DueStore.rest

    def record_between_looks(store: DueStore, now: datetime) -> None:
        run(1)
        record_rest(store, now)
        run(2)

    svc.due.claim_second(clock.now())
    monkeypatch.setattr(DueStore, "rest", record_between_looks)
    run(0)
    rested = rest.settles(clock.now(), _watermark(svc))
    run(3)

    assert not (rested and not started), (
        "rest: a job put while the driver rests is seen by the driver or starts another"
    )


def _indexer(svc: Services, clock: ManualClock, started: list[datetime]) -> DueIndexer:
    waker = Waker(svc.due, clock, lambda: started.append(clock.now()))
    return DueIndexer(svc.due, clock, svc.jobs, waker=waker)


def _create(svc: Services, **fields: Any) -> None:
    _, created = JobService(svc.api).create(
        TENANT, JobCreate(target="https://x.test/", **fields), None
    )
    assert created


def test_a_job_created_while_the_driver_rests_starts_one_once(
    svc: Services, clock: ManualClock, rest: Rest
) -> None:
    started: list[datetime] = []
    indexer = _indexer(svc, clock, started)
    svc.due.claim_second(clock.now())
    assert rest.settles(clock.now(), _watermark(svc))
    clock.advance(2)

    _create(svc, run_at=clock.now() + timedelta(seconds=10))
    _create(svc, run_at=clock.now() + timedelta(seconds=20))
    indexer.index_all(stream_records(svc))

    assert started == [clock.now()], (
        "rest: a job due before the next minute's driver starts one, and a second job while "
        "that start is unanswered starts none"
    )


def test_a_job_due_after_the_next_minutes_driver_starts_none(
    svc: Services, clock: ManualClock, rest: Rest
) -> None:
    started: list[datetime] = []
    indexer = _indexer(svc, clock, started)
    clock.set(minute_of(clock.now()) + timedelta(seconds=5))

    _create(svc, run_at=minute_of(clock.now()) + timedelta(minutes=2))
    indexer.index_all(stream_records(svc))

    assert started == [], "rest: the next minute's driver, started by the rule, sweeps it on time"


def test_a_job_created_while_a_driver_is_awake_starts_none_until_it_rests(
    svc: Services, clock: ManualClock
) -> None:
    started: list[datetime] = []
    waker = Waker(svc.due, clock, lambda: started.append(clock.now()))
    svc.due.claim_second(clock.now())

    while_awake = waker.indexed(clock.now() + timedelta(seconds=10))
    svc.due.rest(clock.now())
    after_rest = waker.indexed(clock.now() + timedelta(seconds=10))
    unanswered = waker.indexed(clock.now() + timedelta(seconds=10))
    clock.advance(1)
    svc.due.claim_second(clock.now())
    svc.due.rest(clock.now())
    answered = waker.indexed(clock.now() + timedelta(seconds=10))

    assert (while_awake, after_rest, unanswered, answered) == (False, True, False, True), (
        "rest: a wake only when no driver is awake and no earlier wake is unanswered"
    )


def test_a_driver_that_stopped_claiming_is_not_awake(svc: Services, clock: ManualClock) -> None:
    svc.due.claim_second(clock.now())
    clock.advance(AWAKE_WITHIN_SEC + 1)

    assert not svc.due.driver_awake(clock.now(), AWAKE_WITHIN_SEC), (
        "rest: a driver that died without resting stops counting as awake within seconds"
    )


def test_the_scheduler_with_rest_on_ends_after_its_first_idle_tick(
    make_svc: Any, clock: ManualClock
) -> None:
    resting = make_svc(driver_rest=True)
    resting.due.advance_watermark(minute_of(clock.now()) - timedelta(minutes=2))
    install(resting)
    try:
        result = scheduler_handler(
            {"time": "2026-03-02T12:00:00Z"}, LocalContext("takt-scheduler", timeout_ms=5_000)
        )
    finally:
        install(None)

    assert (result["seconds"], result["ticks"]) == (1, 1), (
        "idle cost: an idle driver with rest on ends after one tick, not its whole life"
    )


def _drive(svc: Services, clock: ManualClock, dispatched: list[datetime]) -> None:
    """One scheduler invocation with rest on, as the handler runs it, on the test's clock: tick
    every second until the driver rests (or its minute and ten seconds are over)."""
    rest = Rest(svc.due, svc.settings.max_catchup_buckets)
    end = clock.now() + timedelta(seconds=70)
    rested = False

    def on_tick(tick: TickResult) -> None:
        nonlocal rested
        if tick.total.dispatched:
            dispatched.append(clock.now())
        rested = rest.settles(clock.now(), tick.watermark)

    svc.driver.run(
        keep_going=lambda: not rested and clock.now() < end, wait=clock.advance, on_tick=on_tick
    )


@pytest.mark.parametrize("wakes", [True, False], ids=["indexer-wakes", "no-wake"])
def test_the_lateness_a_rest_adds_to_a_job_created_meanwhile(
    make_svc: Any, clock: ManualClock, wakes: bool
) -> None:
    """Measured in the test's time, the AWS latencies of the stream and the start aside: the
    minute's driver rests at its first second, a job is created ten seconds later to run two
    seconds after that. The indexer's wake starts a driver that dispatches it on its second;
    without the wake it waits for the next minute's driver."""
    svc = make_svc(driver_rest=True, dispatch_ahead_sec=0.0)
    minute = minute_of(clock.now())
    svc.due.advance_watermark(minute - timedelta(minutes=2))
    dispatched: list[datetime] = []
    clock.set(minute + timedelta(seconds=1))
    _drive(svc, clock, dispatched)
    clock.set(minute + timedelta(seconds=10))
    due = clock.now() + timedelta(seconds=2)
    _create(svc, run_at=due)
    starts: list[datetime] = []
    waker = Waker(svc.due, clock, lambda: starts.append(clock.now())) if wakes else None
    DueIndexer(svc.due, clock, svc.jobs, waker=waker).index_all(stream_records(svc))

    for start in starts:
        clock.set(start)
        _drive(svc, clock, dispatched)
    clock.set(max(clock.now(), minute + timedelta(minutes=1)))
    _drive(svc, clock, dispatched)

    lateness = (dispatched[0] - due).total_seconds()
    assert lateness == (0 if wakes else 48), (
        f"rest: the job ran {lateness:g} s late; the indexer's wake makes it 0, without it the "
        "next minute's driver takes it 48 s late"
    )


def test_a_rest_that_fails_to_settle_leaves_the_driver_ticking(
    make_svc: Any, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    resting = make_svc(driver_rest=True)
    resting.due.advance_watermark(minute_of(clock.now()) - timedelta(minutes=2))

    def throttled(rest: Rest, now: datetime, watermark: datetime | None) -> bool:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": ""}}, "Query")

    monkeypatch.setattr(Rest, "settles", throttled)
    install(resting)
    try:
        result = scheduler_handler({"ticks": 1}, LocalContext("takt-scheduler", timeout_ms=5_000))
    finally:
        install(None)

    assert (result["seconds"], result["ticks"]) == (1, 1), (
        "rest: a failed look at the index is logged and the driver goes on, not the invocation "
        "ended with the error"
    )


def test_a_wake_that_fails_leaves_the_job_indexed_for_the_next_minutes_driver(
    svc: Services, clock: ManualClock, rest: Rest
) -> None:
    def refused() -> None:
        raise ClientError({"Error": {"Code": "TooManyRequestsException", "Message": ""}}, "Invoke")

    indexer = DueIndexer(svc.due, clock, svc.jobs, waker=Waker(svc.due, clock, refused))
    svc.due.claim_second(clock.now())
    assert rest.settles(clock.now(), _watermark(svc))
    _create(svc, run_at=clock.now() + timedelta(seconds=10))

    result = indexer.index_all(stream_records(svc))

    assert (result.indexed, result.quarantined) == (1, 0), (
        "rest: a failed wake is the next minute's driver's to cover, never a failed stream record"
    )


def test_the_indexers_wake_builds_its_lambda_client_at_the_first_wake_not_at_its_cold_start(
    svc: Services, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cold start: the indexer builds no client it may never use, and the wake's client is
    `takt.aws.make_lambda_client`'s (the deployment's endpoint and client settings)."""
    built: list[tuple[object, int | None]] = []
    invoked: list[dict[str, Any]] = []

    class Lambda:
        def invoke(self, **call: Any) -> None:
            invoked.append(call)

    def make(settings: object, read_timeout_sec: int | None) -> Lambda:
        built.append((settings, read_timeout_sec))
        return Lambda()

    monkeypatch.setattr(wiring_indexer, "make_lambda_client", make)
    settings = svc.settings.model_copy(
        update={"driver_rest": True, "scheduler_function": "takt-scheduler"}
    )
    indexer = wiring_indexer.build_indexer(settings, svc.clients, clock)

    assert built == [], "the indexer's cold start builds no Lambda client"

    _create(svc, run_at=clock.now() + timedelta(seconds=5))
    indexer.index_all(stream_records(svc))

    assert built == [(settings, None)], "the first wake builds one asynchronous Lambda client"
    assert [call["FunctionName"] for call in invoked] == ["takt-scheduler"]
