"""A hot minute split when its items are written, claimed whole: the real due store counts the
minute and spreads its items over N*k partitions, and the ticker's claims (the real claimer, one
claim per partition) dispatch every occurrence exactly once."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from takt.clock import ManualClock
from takt.dispatch.ahead import DueForecaster
from takt.dispatch.claimer import Claimer, ClaimerSettings, ClaimResult
from takt.dispatch.rest import Rest
from takt.dispatch.ticker import SPLIT_SWEEP_EVERY_SEC, WATERMARK_LAG, InlineFanout, Ticker
from takt.models.ids import execution_id, new_job_id, to_ms
from takt.store.due import COUNT_KEEP_SEC, COUNT_PREFIX, EXPIRES, bucket_name, sampled
from takt.store.watches import PREFIX
from takt.wiring import Services
from tests.support.env import ServicesFactory
from tests.support.jobs import TENANT, make_job, store_job
from tests.support.lanes import RecordingLanes

TOP = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
JOBS = 40


def _hot_jobs() -> list[str]:
    """JOBS job ids, the first two of them in the count's sample at every split below the cap
    (one in 64), so the minute splits to its cap after two writes whatever ids the run draws:
    the first adds 16 (split 2), the second 32 (a count of 48, split 4)."""
    counted: list[str] = []
    others: list[str] = []
    while len(counted) < 2 or len(others) < JOBS - 2:
        job_id = new_job_id()
        (counted if sampled(TENANT, job_id, bucket_name(TOP), 64) else others).append(job_id)
    return counted[:2] + others[: JOBS - 2]


def test_a_hot_minute_split_over_sub_partitions_is_claimed_exactly_once(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(due_shards=2, due_split_items=5, due_split_max=4, dispatch_ahead_sec=0)
    clock.set(TOP - timedelta(minutes=2))
    jobs = _hot_jobs()
    for job_id in jobs:
        store_job(svc, make_job(now=clock.now(), next_run_time=TOP, job_id=job_id), clock.now())
    scan = svc.clients.dynamodb.scan(TableName=svc.settings.due_table)["Items"]
    shards = {
        int(item["bucket"]["S"].rsplit("#", 1)[1])
        for item in scan
        if item["bucket"]["S"].startswith(bucket_name(TOP) + "#")
    }
    assert max(shards) >= svc.due.shards and svc.due.partitions(TOP) == 8, (
        "the minute's count split it: its items are spread over N*k = 8 partitions"
    )

    lanes = RecordingLanes(svc)
    claimer = Claimer(ClaimerSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, lanes)
    claimed: Counter[int] = Counter()

    def claim(minute: datetime, shard: int, now: datetime, ways: int | None) -> ClaimResult:
        result = claimer.claim(minute, shard, now, ways)
        claimed[shard] += result.dispatched
        return result

    ticker = Ticker(svc.due, InlineFanout(claim, 4), 5, timedelta(0))
    svc.due.advance_watermark(TOP - timedelta(minutes=1))
    for second in range(SPLIT_SWEEP_EVERY_SEC + 1):
        ticker.tick(TOP + timedelta(seconds=second))

    sent = Counter(o.message.job_id for o in lanes.sent)
    assert sent == Counter(dict.fromkeys(jobs, 1)), (
        "readers enumerate N*k(m): every job of the split minute is dispatched exactly once"
    )
    for job_id in jobs:
        assert svc.executions.get(TENANT, execution_id(job_id, TOP)) is not None
    assert len(claimed) > svc.due.shards, "the claims ran over several sub-partitions"
    watch_partitions = {
        int(item["bucket"]["S"][len(PREFIX) :])
        for item in svc.clients.dynamodb.scan(TableName=svc.settings.due_table)["Items"]
        if item["bucket"]["S"].startswith(PREFIX)
    }
    assert watch_partitions <= set(range(svc.due.watches.shards)), (
        "a sub-partition's claim lists its executions in a watch partition the watchdog sweeps"
    )


def _split_minute(make_svc: ServicesFactory, clock: ManualClock) -> tuple[Services, list[str]]:
    """Services whose TOP minute is split to its cap (N = 2, 8 partitions) by JOBS jobs."""
    svc = make_svc(due_shards=2, due_split_items=5, due_split_max=4)
    clock.set(TOP - timedelta(minutes=2))
    jobs = _hot_jobs()
    for job_id in jobs:
        store_job(svc, make_job(now=clock.now(), next_run_time=TOP, job_id=job_id), clock.now())
    return svc, jobs


def test_a_driver_does_not_rest_while_a_split_minutes_sub_partition_holds_an_item(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc, _ = _split_minute(make_svc, clock)
    table = svc.settings.due_table
    items = [
        item
        for item in svc.clients.dynamodb.scan(TableName=table)["Items"]
        if item["bucket"]["S"].startswith(bucket_name(TOP) + "#")
    ]
    kept = next(i for i in items if int(i["bucket"]["S"].rsplit("#", 1)[1]) >= svc.due.shards)
    for item in items:
        if item is not kept:
            key = {"bucket": item["bucket"], "due_key": item["due_key"]}
            svc.clients.dynamodb.delete_item(TableName=table, Key=key)
    rest = Rest(svc.due, max_buckets=5)
    now = TOP - timedelta(seconds=20)

    assert not rest.settles(now, TOP - timedelta(minutes=1)), (
        "readers enumerate N*k(m): a driver keeps ticking while a sub-partition holds an item"
    )
    svc.clients.dynamodb.delete_item(
        TableName=table, Key={"bucket": kept["bucket"], "due_key": kept["due_key"]}
    )
    assert rest.settles(now, TOP - timedelta(minutes=1)), "with every partition empty it rests"


def test_the_scale_ahead_forecast_counts_every_partition_of_a_split_minute(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc, jobs = _split_minute(make_svc, clock)

    forecast = DueForecaster(svc.due, minutes=2, max_pages=2).forecast(clock.now())

    assert dict(forecast.minutes)[TOP] == len(jobs), (
        "readers enumerate N*k(m): the forecast counts the split minute's sub-partitions too"
    )


def test_a_minutes_count_expires_a_day_after_the_watermark_passes_it_and_not_before(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(due_shards=2, due_split_items=5, due_split_max=4)
    table = svc.settings.due_table
    for job_id in _hot_jobs()[:2]:
        # The two writes that count the minute (to its cap), their items claimed since.
        svc.due.put(TENANT, job_id, TOP, TOP - timedelta(minutes=2))
    for item in svc.clients.dynamodb.scan(TableName=table)["Items"]:
        if item["bucket"]["S"].startswith(bucket_name(TOP) + "#"):
            key = {"bucket": item["bucket"], "due_key": item["due_key"]}
            svc.clients.dynamodb.delete_item(TableName=table, Key=key)
    count = {"bucket": {"S": f"{COUNT_PREFIX}{bucket_name(TOP)}"}, "due_key": {"S": "-"}}
    ticker = Ticker(svc.due, InlineFanout(lambda m, s, n, w: ClaimResult(), 1), 5, timedelta(0))
    svc.due.advance_watermark(TOP)
    ticker.tick(TOP + timedelta(seconds=30))
    held = svc.clients.dynamodb.get_item(TableName=table, Key=count)["Item"]
    assert svc.due.partitions(TOP) == 8 and EXPIRES not in held, (
        "the hot minute split: a minute's count is read until the watermark passes the minute, "
        "so it carries no expiry before"
    )

    # From the first second the watermark may pass TOP (TOP is then WATERMARK_LAG old), until
    # it passed TOP and the quiet minute after it.
    now = TOP + WATERMARK_LAG + timedelta(minutes=1)
    passed: list[datetime] = []
    while len(passed) < 2 and now < TOP + timedelta(minutes=5):
        if ticker.tick(now).watermark == TOP + timedelta(minutes=len(passed) + 1):
            passed.append(now)
        now += timedelta(seconds=1)

    held = svc.clients.dynamodb.get_item(TableName=table, Key=count)["Item"]
    assert (
        int(held.get(EXPIRES, {"N": "0"})["N"])
        == to_ms(passed[0]) // 1000 + COUNT_KEEP_SEC
        == (to_ms(passed[0]) // 1000 + 86400)
    ), "the hot minute split: a minute's count expires a day after the watermark passed it"
    counts = [
        item["bucket"]["S"]
        for item in svc.clients.dynamodb.scan(TableName=table)["Items"]
        if item["bucket"]["S"].startswith(COUNT_PREFIX)
    ]
    assert (len(passed), counts) == (2, [count["bucket"]["S"]]), (
        "a minute nobody counted gets no count item when the watermark passes it"
    )
