"""The hot minute split (takt.store.due, takt.dispatch.ticker): a minute's split grows with its
sampled count, every item is in a partition the readers enumerate whatever split its writer saw,
and a quiet minute costs the ticker what it cost before the split existed."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from takt.dispatch.claimer import ClaimResult
from takt.dispatch.ticker import SPLIT_SWEEP_EVERY_SEC, InlineFanout, LambdaFanout, Ticker
from takt.store.due import SAMPLE, SplitWriter, bucket_name, sampled, shard_of, split_of
from tests.support.fakes import FakeDue

# A second that is not a sweep tick, and one that is.
NOON = datetime(2026, 3, 2, 12, 0, 1, tzinfo=UTC)
SWEEP = NOON.replace(second=SPLIT_SWEEP_EVERY_SEC)
MINUTE = NOON.replace(second=0)
N = 2


class CountingDue(FakeDue):
    """The fake due table, counting the ticker's reads of it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.split_reads: list[set[datetime]] = []
        self.probes: list[tuple[datetime, int]] = []

    def splits(self, minutes: Iterable[datetime]) -> dict[datetime, int]:
        wanted = set(minutes)
        self.split_reads.append(wanted)
        return super().splits(wanted)

    def has_due(self, minute: datetime, shard: int, until: datetime) -> bool:
        self.probes.append((minute, shard))
        return super().has_due(minute, shard, until)


def _draining_claim(due: FakeDue, claimed: list[tuple[str, int]]) -> Any:
    """A claim that takes (deletes) everything due in its partition, recording what it took."""

    def claim(minute: datetime, shard: int, now: datetime, _ways: int | None) -> ClaimResult:
        read = due.read_due(minute, shard, now)
        for item in read.items:
            due.delete_raw(item.bucket, item.due_key)
            claimed.append((item.job_id, shard))
        return ClaimResult(due=len(read.items))

    return claim


def _fill(due: FakeDue, jobs: int, at: datetime = MINUTE) -> list[str]:
    """`jobs` jobs indexed at `at`, written a minute before, as their claims index them."""
    ids = [f"job{i:05d}" for i in range(jobs)]
    for job_id in ids:
        due.put("t", job_id, at, at - timedelta(minutes=1))
    return ids


def _shards_holding(due: FakeDue) -> set[int]:
    return {int(bucket.rsplit("#", 1)[1]) for bucket, _ in due.items}


def test_a_minutes_split_is_the_smallest_power_of_two_its_count_needs_and_never_past_the_cap() -> (
    None
):
    splits = [split_of(count, 4, 10, 8) for count in (0, 40, 41, 80, 81, 160, 161, 10**9)]
    assert splits == [1, 1, 2, 2, 4, 4, 8, 8], (
        "the split is the smallest power of two k with N*k*items >= count, capped at the max"
    )


def test_a_minutes_split_grows_with_its_sampled_count_as_its_items_are_written() -> None:
    due = FakeDue(shards=N, split_items=400, split_max=64)
    seen = []
    for i in range(8_000):
        due.put("t", f"job{i:05d}", MINUTE, MINUTE - timedelta(minutes=1))
        if i % 100 == 0:
            seen.append(due.splits([MINUTE])[MINUTE])
    seen.append(due.splits([MINUTE])[MINUTE])
    assert seen == sorted(seen) and (seen[0], seen[-1]) == (1, 16), (
        "a minute's split grows with its sampled count (8,000 items: 16 sets of N shards "
        "of at most 400 each) and never shrinks"
    )
    count = due.counts[bucket_name(MINUTE)]
    assert abs(count - 8_000) < 8_000 * 0.2, "the sampled count is near the items written"
    assert _shards_holding(due) == set(range(N * 16)), (
        "items written once the minute split go to every one of its N*k partitions"
    )


def test_a_hot_minutes_sample_thins_as_its_split_grows_and_its_count_stays_near_its_items() -> None:
    due = FakeDue(shards=N, split_items=400, split_max=64)
    adds: list[int] = []

    def add(minute: datetime, amount: int) -> int:
        adds.append(amount)
        return due._add(minute, amount)

    due.writer = SplitWriter(
        lambda count: split_of(count, N, 400, 64),
        64,
        add,
        lambda minute: due.counts.get(bucket_name(minute), 0),
        lambda: 0.0,
    )
    _fill(due, 8_000)
    count = due.counts[bucket_name(MINUTE)]
    assert due.splits([MINUTE])[MINUTE] == 16
    assert len(adds) < 8_000 // SAMPLE // 2 and max(adds) > SAMPLE, (
        "a writer whose minute is split k ways samples one item in SAMPLE*k and adds SAMPLE*k"
    )
    assert abs(count - 8_000) < 8_000 * 0.2, "the thinned count still tracks the items written"


def test_a_writer_reads_a_minutes_count_only_for_a_minute_it_writes_several_items_of() -> None:
    reads: list[datetime] = []

    def read(minute: datetime) -> int:
        reads.append(minute)
        return 0

    writer = SplitWriter(
        lambda count: split_of(count, N, 5, 4), 4, lambda m, n: n, read, lambda: 0.0
    )
    jobs = [f"job{i:05d}" for i in range(200)]
    quiet = [MINUTE + timedelta(minutes=i) for i in range(100)]
    for minute in quiet:
        for job_id in jobs[:2]:
            if not sampled("t", job_id, bucket_name(minute)):
                writer.split("t", job_id, minute)
    hot = MINUTE - timedelta(minutes=1)
    for job_id in jobs:
        if not sampled("t", job_id, bucket_name(hot)):
            writer.split("t", job_id, hot)
    assert reads == [hot], (
        "an unsampled writer reads a minute's count only once it wrote READ_AFTER_WRITES items "
        "of it, and then trusts the count for COUNT_CACHE_SEC"
    )


def test_a_writer_of_a_minute_split_to_the_cap_adds_nothing_to_its_count() -> None:
    due = FakeDue(shards=N, split_items=5, split_max=4)
    _fill(due, 200)
    count = due.counts[bucket_name(MINUTE)]
    assert split_of(count, N, 5, 4) == 4
    _fill(due, 200, at=MINUTE + timedelta(seconds=1))
    assert due.counts[bucket_name(MINUTE)] == count, (
        "a writer whose minute is split to the cap writes only its item: the count can add nothing"
    )


def test_a_quiet_minutes_writers_add_to_its_count_one_in_sample_and_keep_its_n_shards() -> None:
    due = FakeDue(shards=N)
    ids = _fill(due, 320)
    expected = SAMPLE * sum(sampled("t", job_id, bucket_name(MINUTE)) for job_id in ids)
    assert due.counts[bucket_name(MINUTE)] == expected, "one writer in SAMPLE adds SAMPLE"
    assert _shards_holding(due) <= set(range(N)), "an unsplit minute keeps its N shards"


def test_an_item_written_at_a_stale_split_is_still_claimed() -> None:
    due = FakeDue(shards=N, split_items=5, split_max=4)
    ids = _fill(due, 200)
    assert due.splits([MINUTE])[MINUTE] == 4
    # Another process's writer, which read the minute's count before it split and trusts its
    # cache: its item goes to a base shard, as its writer saw the minute.
    due.writer = SplitWriter(
        lambda count: split_of(count, N, 5, 4), 4, lambda m, n: 0, lambda m: 0, lambda: 0.0
    )
    stale = "late"
    due.put("t", stale, MINUTE, MINUTE - timedelta(minutes=1))
    assert any(key.endswith(f"#{stale}") and int(b[-3:]) < N for b, key in due.items)
    claimed: list[tuple[str, int]] = []
    ticker = Ticker(due, InlineFanout(_draining_claim(due, claimed), 4), 5, timedelta(seconds=1))
    due.advance_watermark(MINUTE)
    for second in range(SPLIT_SWEEP_EVERY_SEC + 1):
        ticker.tick(NOON + timedelta(seconds=second))
    assert sorted(job for job, _ in claimed) == sorted([*ids, stale]), (
        "readers enumerate N*k(m): every item is claimed once, the stale writer's included"
    )
    assert {shard for _, shard in claimed} == set(range(N * 4)), "claims ran in every partition"


def test_a_quiet_minute_costs_the_ticker_its_n_probes_and_no_split_read_between_sweeps() -> None:
    due = CountingDue(shards=N)
    _fill(due, 10, at=MINUTE + timedelta(seconds=30))
    ticker = Ticker(due, _fanout(_NoLambda(), due), 5, timedelta(0))
    due.advance_watermark(MINUTE - timedelta(minutes=2))
    ticker.tick(NOON)
    assert (len(due.probes), due.split_reads) == (2 * N, []), (
        "a quiet minute: N probes for each minute swept, and no read of its split"
    )
    ticker.tick(SWEEP)
    assert len(due.split_reads) == 1, "a sweep tick reads every swept minute's split at once"


def test_a_split_minutes_busy_base_shard_has_its_sub_partitions_claimed_without_a_probe() -> None:
    due = CountingDue(shards=N, split_items=5, split_max=4)
    _fill(due, 200)
    client = _NoLambda()
    ticker = Ticker(due, _fanout(client, due), 5, timedelta(0))
    due.advance_watermark(MINUTE - timedelta(minutes=1))
    ticker.tick(SWEEP)
    assert sorted(shard for minute, shard in client.invoked if minute == MINUTE) == list(
        range(N * 4)
    ), "a sweep tick probes and claims every partition of the split minute"
    told = {
        n
        for (minute, _), n in zip(client.invoked, client.partitions, strict=True)
        if minute == MINUTE
    }
    assert told == {N * 4}, (
        "docs/FAIRNESS.md: each claimer's event names the N*k partitions its tick claims of "
        "a split minute, which its share of the lanes' room is divided by"
    )
    due.probes.clear()
    client.invoked.clear()
    ticker.tick(SWEEP + timedelta(seconds=1))
    assert len(due.probes) == 2 * N, "between sweeps a tick still probes only N shards a minute"
    assert sorted(shard for minute, shard in client.invoked if minute == MINUTE) == list(
        range(N * 4)
    ), "each busy base shard's sub-partitions are claimed beside it, each by its own claim"


def test_the_watermark_passes_a_split_minute_only_once_every_partition_is_empty() -> None:
    due = FakeDue(shards=N, split_items=5, split_max=4)
    old = MINUTE - timedelta(minutes=5)
    _fill(due, 200, at=old)
    leftover = next((b, k) for b, k in due.items if int(b[-3:]) == N * 4 - 1)
    for key in list(due.items):
        if key != leftover:
            del due.items[key]
    due.advance_watermark(old)
    ticker = Ticker(due, InlineFanout(lambda m, s, n, w: ClaimResult(), 2), 10, timedelta(0))
    for second in range(1, 5):
        ticker.tick(NOON + timedelta(seconds=second))
    assert due.watermark() == old, (
        "readers enumerate N*k(m): the watermark stays while a sub-partition holds an item"
    )
    del due.items[leftover]
    for second in range(5, 9):
        ticker.tick(NOON + timedelta(seconds=second))
    moved = due.watermark()
    assert moved is not None and moved > old, (
        "once every partition of the split minute is empty the watermark moves on"
    )


def test_a_split_item_lands_in_the_shard_of_its_hash_mod_n_times_the_split() -> None:
    due = FakeDue(shards=N, split_items=5, split_max=4)
    _fill(due, 200)
    due.put("t", "fresh", MINUTE, MINUTE - timedelta(minutes=1))
    bucket = next(b for b, key in due.items if key.endswith("#t#fresh"))
    assert bucket == f"{bucket_name(MINUTE)}#{shard_of('t', 'fresh', N * 4):03d}", (
        "an item of a split minute goes to crc32(tenant#job) mod N*k"
    )


class _NoLambda:
    """Records the claims a LambdaFanout starts, as (minute, shard), and the partitions each
    event says its tick claims of the minute."""

    def __init__(self) -> None:
        self.invoked: list[tuple[datetime, int]] = []
        self.partitions: list[int | None] = []

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        event = json.loads(kwargs["Payload"])
        minute = datetime.fromisoformat(event["minute"].replace("Z", "+00:00"))
        self.invoked.append((minute, int(event["shard"])))
        self.partitions.append(event.get("partitions"))
        return {"StatusCode": 202}


def _fanout(client: _NoLambda, due: FakeDue) -> LambdaFanout:
    """A LambdaFanout whose probes read the fake table and whose invocations `client` records."""
    probe = lambda task: due.has_due(task.minute, task.shard, task.now)  # noqa: E731
    return LambdaFanout(client, "claimer", probe, 4)  # type: ignore[arg-type]


def test_a_tick_starts_its_claims_in_an_order_shuffled_by_its_second() -> None:
    """Rule (`claim_order`): more partitions may be busy than claimers are free, and the claims
    a tick starts first take them; the order is shuffled each second so the lowest partitions
    do not take them on every tick, and the same second orders the same way."""
    due = FakeDue(shards=N, split_items=5, split_max=4)
    _fill(due, 200)
    due.advance_watermark(MINUTE)
    started: list[int] = []

    def claim(minute: datetime, shard: int, now: datetime, ways: int | None) -> ClaimResult:
        started.append(shard)
        return ClaimResult()

    orders = []
    for second in (SWEEP, SWEEP + timedelta(seconds=SPLIT_SWEEP_EVERY_SEC)) * 2:
        started.clear()
        Ticker(due, InlineFanout(claim, 1), 5, timedelta(0)).tick(second)
        orders.append(list(started))

    assert sorted(orders[0]) == sorted(orders[1]) == list(range(N * 4)), (
        "every partition of the split minute, on each sweep tick"
    )
    assert orders[0] != orders[1], (
        "issue 26: a tick's claims start in an order shuffled by its second, not lowest first"
    )
    assert orders[2:] == orders[:2], "the same second starts its claims in the same order"
