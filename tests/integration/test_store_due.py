"""The due index: bucketing, range queries by due time, the rewrite fence, the watermark."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from takt.clock import ManualClock
from takt.store import batch
from takt.store.due import bucket_name, minute_of, shard_of
from takt.wiring import Services
from tests.support.faults import Throttled
from tests.support.jobs import TENANT, job_id_in_shard

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _shard(svc: Services, job_id: str) -> int:
    return shard_of(TENANT, job_id, svc.due.shards)


def test_an_item_due_later_goes_to_its_own_minute_bucket(svc: Services, clock: ManualClock) -> None:
    due = NOW + timedelta(minutes=7, seconds=12)

    svc.due.put(TENANT, "job_a", due, clock.now())

    items = svc.due.query_due(minute_of(due), _shard(svc, "job_a"), due)
    assert [(i.job_id, i.due) for i in items] == [("job_a", due)]
    assert items[0].bucket.startswith(bucket_name(minute_of(due)))


def test_an_item_already_past_goes_to_the_current_minute_bucket(
    svc: Services, clock: ManualClock
) -> None:
    clock.advance(90)
    past = NOW - timedelta(minutes=10)

    svc.due.put(TENANT, "job_a", past, clock.now())

    shard = _shard(svc, "job_a")
    assert svc.due.query_due(minute_of(past), shard, clock.now()) == []
    [item] = svc.due.query_due(minute_of(clock.now()), shard, clock.now())
    assert item.due == past  # the sort key keeps the real due time


def test_query_due_returns_only_items_due_by_until_oldest_first(
    svc: Services, clock: ManualClock
) -> None:
    job_ids = ["job_late", "job_early", "job_mid", "job_future"]
    shard = 0
    while any(_shard(svc, j) != shard for j in job_ids):
        job_ids = [f"{j}x" for j in job_ids]
    late, early, mid, future = job_ids
    minute = NOW + timedelta(minutes=1)
    svc.due.put(TENANT, late, minute + timedelta(seconds=30), clock.now())
    svc.due.put(TENANT, early, minute + timedelta(seconds=1), clock.now())
    svc.due.put(TENANT, mid, minute + timedelta(seconds=30, milliseconds=-1), clock.now())
    svc.due.put(TENANT, future, minute + timedelta(seconds=31), clock.now())

    items = svc.due.query_due(minute, shard, minute + timedelta(seconds=30))

    assert [i.job_id for i in items] == [early, mid, late]


def test_put_again_for_the_same_due_time_keeps_one_item(svc: Services, clock: ManualClock) -> None:
    due = NOW + timedelta(minutes=1)
    svc.due.put(TENANT, "job_a", due, clock.now())
    svc.due.put(TENANT, "job_a", due, clock.now() + timedelta(seconds=5))

    items = svc.due.query_due(minute_of(due), _shard(svc, "job_a"), due)

    assert len(items) == 1
    assert items[0].written_ms == int((NOW + timedelta(seconds=5)).timestamp() * 1000)


def test_put_many_indexes_each_job_as_put_does_and_writes_again_what_a_throttle_left(
    svc: Services, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = [(TENANT, f"job_{i:02d}", NOW + timedelta(seconds=i)) for i in range(30)]
    throttled = Throttled(svc.clients.dynamodb)
    store = copy.copy(svc.due)
    store._db = throttled  # type: ignore[assignment]
    waits: list[float] = []
    monkeypatch.setattr(batch, "time", SimpleNamespace(sleep=waits.append))

    store.put_many(entries, clock.now())

    until = NOW + timedelta(minutes=1)
    indexed = {
        (TENANT, item.job_id, item.due)
        for shard in range(svc.due.shards)
        for item in svc.due.query_due(minute_of(NOW), shard, until)
    }
    assert indexed == set(entries), "invariant 2: each job is indexed at its due time"
    # 25 a request; what the first left unwritten goes out with the last 5, after a wait.
    assert throttled.write_calls == 2
    assert len(waits) == 1 and waits[0] > 0


def test_delete_if_unchanged_deletes_the_item_as_read(svc: Services, clock: ManualClock) -> None:
    due = NOW + timedelta(minutes=1)
    svc.due.put(TENANT, "job_a", due, clock.now())
    [item] = svc.due.query_due(minute_of(due), _shard(svc, "job_a"), due)

    assert svc.due.delete_if_unchanged(item)
    assert svc.due.query_due(minute_of(due), _shard(svc, "job_a"), due) == []


def test_delete_if_unchanged_keeps_an_item_rewritten_since_it_was_read(
    svc: Services, clock: ManualClock
) -> None:
    due = NOW + timedelta(minutes=1)
    svc.due.put(TENANT, "job_a", due, clock.now())
    [read] = svc.due.query_due(minute_of(due), _shard(svc, "job_a"), due)
    svc.due.put(TENANT, "job_a", due, clock.now() + timedelta(seconds=1))

    assert not svc.due.delete_if_unchanged(read)
    assert len(svc.due.query_due(minute_of(due), _shard(svc, "job_a"), due)) == 1


def test_a_bucket_is_empty_once_its_items_are_deleted(svc: Services, clock: ManualClock) -> None:
    due = NOW + timedelta(minutes=1)
    shard = _shard(svc, "job_a")
    svc.due.put(TENANT, "job_a", due, clock.now())
    assert not svc.due.bucket_empty(minute_of(due), shard)

    [item] = svc.due.query_due(minute_of(due), shard, due)
    svc.due.delete_if_unchanged(item)

    assert svc.due.bucket_empty(minute_of(due), shard)


def test_the_watermark_only_moves_forward(svc: Services) -> None:
    assert svc.due.watermark() is None

    svc.due.advance_watermark(NOW)
    svc.due.advance_watermark(NOW - timedelta(minutes=5))

    assert svc.due.watermark() == NOW
    svc.due.advance_watermark(NOW + timedelta(minutes=1))
    assert svc.due.watermark() == NOW + timedelta(minutes=1)


def _flood_items(svc: Services, tenant_id: str, count: int, due: datetime, now: datetime) -> None:
    """`count` due items of `tenant_id` at `due`, all in shard 0."""
    for _ in range(count):
        svc.due.put(tenant_id, job_id_in_shard(tenant_id, 0, svc.due.shards), due, now)


def _counting_queries(svc: Services) -> list[int]:
    calls: list[int] = []
    svc.clients.dynamodb.meta.events.register(
        "before-call.dynamodb.Query", lambda **_: calls.append(1)
    )
    return calls


def test_a_fair_read_skips_a_flood_due_at_one_instant_to_reach_what_is_behind_it(
    svc: Services, clock: ManualClock
) -> None:
    flood_at = clock.now()
    _flood_items(svc, "flood", 40, flood_at, clock.now())
    _flood_items(svc, "quiet", 2, flood_at + timedelta(milliseconds=5), clock.now())
    _flood_items(svc, "flood", 1, flood_at + timedelta(milliseconds=9), clock.now())
    queries = _counting_queries(svc)

    read = svc.due.read_fair(
        minute_of(flood_at), 0, flood_at + timedelta(seconds=1), page=4, pages=4
    )

    items = read.items
    tenants = [i.tenant_id for i in items]
    assert tenants == ["flood"] * 4 + ["quiet"] * 2 + ["flood"]
    assert [i.due for i in items] == sorted(i.due for i in items)
    assert read.backlogged == {"flood"}  # the rest of its first run was skipped
    assert len(queries) == 2  # a full page and a short one: the rest is read


def test_a_fair_read_of_a_backlog_spread_over_instants_costs_its_pages_and_sees_the_newest(
    svc: Services, clock: ManualClock
) -> None:
    start = clock.now()
    for ms in range(30):
        _flood_items(svc, "flood", 1, start + timedelta(milliseconds=ms), clock.now())
    fresh = start + timedelta(milliseconds=500)
    _flood_items(svc, "quiet", 1, fresh, clock.now())
    queries = _counting_queries(svc)

    read = svc.due.read_fair(minute_of(start), 0, fresh, page=3, pages=3)

    items = read.items
    assert len(queries) == 3
    assert read.backlogged == {"flood"}
    # Two pages of the oldest (nothing to skip: one item an instant), then the newest page.
    assert [(i.tenant_id, i.due) for i in items][:6] == [
        ("flood", start + timedelta(milliseconds=ms)) for ms in range(6)
    ]
    assert ("quiet", fresh) in [(i.tenant_id, i.due) for i in items]
    assert len(items) == 9


def test_a_fair_read_of_a_partition_smaller_than_a_page_is_one_query_and_complete(
    svc: Services, clock: ManualClock
) -> None:
    _flood_items(svc, "quiet", 2, clock.now(), clock.now())
    queries = _counting_queries(svc)

    read = svc.due.read_fair(minute_of(clock.now()), 0, clock.now(), page=5, pages=4)

    assert (len(read.items), read.backlogged, len(queries)) == (2, frozenset(), 1)
