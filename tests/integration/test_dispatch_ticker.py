"""The ticker's sweep: the recent minutes always, the backlog from the watermark, and a
watermark that moves past a minute only when it is old and empty."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from takt.clock import ManualClock
from takt.dispatch.claimer import FAIR_READ_PAGE
from takt.dispatch.ticker import BACKLOG_EVERY_SEC, WATERMARK_LAG
from takt.models.ids import to_ms
from takt.store.due import bucket_name, shard_of
from takt.wiring import Services
from tests.support.env import ServicesFactory
from tests.support.history import Expect, HistoryChecker
from tests.support.jobs import job_id_in_shard, make_job, store_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _one_off_at(svc: Services, clock: ManualClock, due: datetime) -> str:
    """A one-off job indexed at `due` by a writer whose clock read `due` (its own bucket)."""
    job = make_job(now=due, next_run_time=due)
    store_job(svc, job, due)
    return job.job_id


def test_the_first_tick_looks_back_as_far_as_one_tick_may(
    svc: Services, clock: ManualClock
) -> None:
    result = svc.ticker.tick(clock.now())

    window = svc.settings.max_catchup_buckets
    assert result.claims == window * svc.due.shards  # 11:01 to 12:00, every shard
    # It started at 11:01 and, that minute being empty, has already moved past it.
    assert svc.due.watermark() == NOON - timedelta(minutes=window - 2)


def test_a_job_created_before_the_first_tick_is_found(svc: Services, clock: ManualClock) -> None:
    early = _one_off_at(svc, clock, NOON - timedelta(minutes=20))

    svc.ticker.tick(clock.now())

    page, _ = svc.executions.list_for_job("tenant-a", early, limit=1, cursor=None)
    assert len(page) == 1


def test_the_watermark_moves_one_empty_old_minute_per_tick_and_stops_at_the_lag(
    svc: Services, clock: ManualClock
) -> None:
    svc.due.advance_watermark(NOON - timedelta(minutes=6))
    seen = []

    for _ in range(6):
        seen.append(svc.ticker.tick(clock.now()).watermark)
        clock.advance(1)

    assert seen == [NOON - timedelta(minutes=m) for m in (5, 4, 3, 2, 2, 2)]
    assert svc.due.watermark() == NOON - WATERMARK_LAG


def test_the_watermark_stays_on_a_minute_that_still_holds_an_item(
    svc: Services, clock: ManualClock
) -> None:
    old = NOON - timedelta(minutes=6)
    svc.due.advance_watermark(old)
    # An item the claim must leave in place: written moments ago (young) for a job that is not
    # stored yet, in the old minute's bucket (as a writer with a slow clock would put it).
    svc.clients.dynamodb.put_item(
        TableName=svc.settings.due_table,
        Item={
            "bucket": {"S": f"{bucket_name(old)}#{shard_of('tenant-a', 'job_x', 4):03d}"},
            "due_key": {"S": f"{to_ms(old):013d}#tenant-a#job_x"},
            "written_ms": {"N": str(to_ms(NOON))},
        },
    )

    result = svc.ticker.tick(clock.now())

    assert (result.total.left, result.watermark) == (1, old)
    assert svc.due.watermark() == old


def test_a_backlog_older_than_the_recent_minutes_is_swept(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    old = NOON - timedelta(minutes=10)
    svc.due.advance_watermark(old)
    job_id = _one_off_at(svc, clock, old + timedelta(seconds=20))

    result = svc.ticker.tick(clock.now())

    assert result.total.dispatched == 1
    report = checker.check([Expect(job_id, [old + timedelta(seconds=20)], None)])
    assert report.problems() == []


def test_a_long_backlog_is_swept_a_window_at_a_time_without_delaying_what_is_due_now(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(max_catchup_buckets=3)
    svc.due.advance_watermark(NOON - timedelta(minutes=10))
    oldest = _one_off_at(svc, clock, NOON - timedelta(minutes=10))
    middle = _one_off_at(svc, clock, NOON - timedelta(minutes=5))
    current = _one_off_at(svc, clock, NOON)

    svc.ticker.tick(clock.now())

    def dispatched(job_id: str) -> bool:
        page, _ = svc.executions.list_for_job("tenant-a", job_id, limit=1, cursor=None)
        return bool(page)

    assert (dispatched(oldest), dispatched(middle), dispatched(current)) == (True, False, True)
    ticks = 1
    while not dispatched(middle):
        # Old minutes are swept on every tenth second; step from one such tick to the next.
        clock.advance(BACKLOG_EVERY_SEC)
        svc.ticker.tick(clock.now())
        ticks += 1
        assert ticks <= 10, "the backlog window never reached 11:55"
    # The watermark moves a minute per tick: 11:50 -> 11:53 after three ticks, whose window
    # (11:53-11:55) reaches the middle job.
    assert ticks == 4


def test_an_old_partition_with_a_backlog_is_swept_on_every_tick_until_it_is_empty(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    # A fixed bound (no drain sizing): the sweep is what is checked here.
    svc = make_svc(claim_max_items=20, fair_queue_sec=None)
    old = NOON - timedelta(minutes=10)
    svc.due.advance_watermark(old)
    # One run of one tenant at one instant, more than a page: the claim reads a page, counts the
    # tenant backlogged and takes its bound; what is left then fits in a page and goes whole.
    flood = FAIR_READ_PAGE + 2
    for _ in range(flood):
        job = make_job(now=old, next_run_time=old, job_id=job_id_in_shard("tenant-a", 0, 4))
        store_job(svc, job, old)

    dispatched, claims = [], []
    for _ in range(4):
        # Only the first of these ticks is one of the every-tenth-second backlog sweeps.
        result = svc.ticker.tick(clock.now())
        dispatched.append(result.total.dispatched)
        claims.append(result.claims)
        clock.advance(1)

    assert dispatched == [20, flood - 20, 0, 0]
    recent = 2 * svc.due.shards  # the previous and the current minute
    # The old partition is swept alone after the backlog sweep while it holds something; once
    # empty, the watermark moves past its minute and it is not swept again.
    assert claims[1] == recent + 1
    assert claims[3] == recent
