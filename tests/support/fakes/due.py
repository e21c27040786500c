"""The due table in memory: its (minute bucket, shard) partitions (`ClaimerDue`), what the ticker
reads of them (`SweptDue`: the minutes' sampled counts and splits, emptiness, the watermark) and
the claims' watch lists (`ClaimWatches`, `SweptWatches`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from takt.models.ids import from_ms, to_ms
from takt.store.due import SplitWriter, bucket_name, count_expiry, minute_of, shard_of, split_of
from takt.store.ports import DueItem, ExecutionRef, FairRead, UnreadableDue, Watch
from takt.store.watches import PREFIX, READ_LIMIT, watch_partitions

Item = dict[str, Any]


class FakeWatches:
    """Watch lists by partition, each checked at its time and deleted when done."""

    def __init__(self, due_shards: int) -> None:
        self.shards = watch_partitions(due_shards)
        self.lists: dict[tuple[str, str], Watch] = {}

    def add(self, due_shard: int, check_at_ms: int, executions: Sequence[ExecutionRef]) -> None:
        bucket = f"{PREFIX}{due_shard % self.shards:03d}"
        key = f"{check_at_ms:013d}#{len(self.lists):08d}"
        self.lists[(bucket, key)] = Watch(bucket, key, from_ms(check_at_ms), tuple(executions))

    def due(self, shard: int, until: datetime) -> list[Watch]:
        bucket = f"{PREFIX}{shard:03d}"
        found = sorted(
            (key, watch)
            for (b, key), watch in self.lists.items()
            if b == bucket and watch.check_at <= until
        )
        return [watch for _, watch in found[:READ_LIMIT]]

    def done(self, watch: Watch) -> None:
        self.lists.pop((watch.bucket, watch.watch_key), None)

    def listed(self) -> list[str]:
        """The execution ids every list still holds, in check order."""
        return [ref.execution_id for _, w in sorted(self.lists.items()) for ref in w.executions]


class FakeDue:
    """Due items keyed by (bucket, due key) as `DueStore` writes them; a partition's queries are
    consistent (as the store asks), and `delete_if_unchanged` is conditional on `written_ms`.

    A minute's sampled count is kept by bucket name (`counts`), added to and read by one writer's
    `SplitWriter` as the store's writers do, so an item goes to the shard the store would put it
    in; `splits` reads the counts as they stand."""

    def __init__(
        self,
        shards: int = 1,
        split_items: int = 2000,
        split_max: int = 16,
        monotonic: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self.shards = shards
        self.split_items = split_items
        self.split_max = split_max
        self.items: dict[tuple[str, str], Item] = {}
        self.counts: dict[str, int] = {}
        # When each counted minute's count item expires (epoch seconds), by bucket name.
        self.expiries: dict[str, int] = {}
        self.watches = FakeWatches(shards)
        self.writer = SplitWriter(self._split, split_max, self._add, self._read, monotonic)
        self.minute_watermark: datetime | None = None
        # How many entries each `put_many` held, in call order.
        self.batches: list[int] = []
        # The jobs whose due items DynamoDB refuses to write (a record fault): a `put_many`
        # naming one of them is refused whole, as BatchWriteItem refuses an invalid request.
        self.refused: set[str] = set()

    def _split(self, count: int) -> int:
        return split_of(count, self.shards, self.split_items, self.split_max)

    def _add(self, minute: datetime, amount: int) -> int:
        bucket = bucket_name(minute)
        self.counts[bucket] = self.counts.get(bucket, 0) + amount
        return self.counts[bucket]

    def _read(self, minute: datetime) -> int:
        return self.counts.get(bucket_name(minute), 0)

    def splits(self, minutes: Iterable[datetime]) -> dict[datetime, int]:
        return {minute: self._split(self._read(minute)) for minute in set(minutes)}

    def partitions(self, minute: datetime) -> int:
        return self.shards * self.splits([minute])[minute]

    def bucket_empty(self, minute: datetime, shard: int) -> bool:
        bucket = f"{bucket_name(minute)}#{shard:03d}"
        return not any(b == bucket for b, _ in self.items)

    def has_due(self, minute: datetime, shard: int, until: datetime) -> bool:
        return bool(self._query(minute, shard, until, limit=1))

    def watermark(self) -> datetime | None:
        return self.minute_watermark

    def advance_watermark(self, to_minute: datetime) -> None:
        if self.minute_watermark is None or to_minute > self.minute_watermark:
            self.minute_watermark = to_minute

    def expire_count(self, minute: datetime, now: datetime) -> None:
        bucket = bucket_name(minute)
        if bucket in self.counts:
            self.expiries[bucket] = count_expiry(now)

    def put(self, tenant_id: str, job_id: str, due: datetime, now: datetime) -> None:
        if job_id in self.refused:
            raise _invalid("PutItem")
        minute = max(minute_of(due), minute_of(now))
        split = self.writer.split(tenant_id, job_id, minute) if self.split_max > 1 else 1
        shard = shard_of(tenant_id, job_id, self.shards * split)
        bucket = f"{bucket_name(minute)}#{shard:03d}"
        due_key = f"{to_ms(due):013d}#{tenant_id}#{job_id}"
        self.items[(bucket, due_key)] = {
            "bucket": {"S": bucket},
            "due_key": {"S": due_key},
            "written_ms": {"N": str(to_ms(now))},
        }

    def put_many(self, entries: Sequence[tuple[str, str, datetime]], now: datetime) -> None:
        self.batches.append(len(entries))
        if any(job_id in self.refused for _, job_id, _ in entries):
            raise _invalid("BatchWriteItem")
        for tenant_id, job_id, due in entries:
            self.put(tenant_id, job_id, due, now)

    def indexed(self, tenant_id: str, job_id: str) -> list[datetime]:
        """The due times the index holds for one job, oldest first."""
        suffix = f"#{tenant_id}#{job_id}"
        return sorted(
            from_ms(int(key.split("#", 1)[0])) for _, key in self.items if key.endswith(suffix)
        )

    def _query(
        self,
        minute: datetime,
        shard: int,
        until: datetime,
        *,
        low: str | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[Item]:
        """One Query of a partition, as DynamoDB answers `DueStore`'s: the items whose key is
        in [`low`, the last key due by `until`], in key order (newest first with `newest`), at
        most `limit` of them."""
        bucket = f"{bucket_name(minute)}#{shard:03d}"
        high = f"{to_ms(until):013d}~"
        keys = sorted(
            key
            for b, key in self.items
            if b == bucket and key <= high and (low is None or key >= low)
        )
        if newest:
            keys.reverse()
        return [self.items[(bucket, key)] for key in keys[:limit]]

    def read_due(self, minute: datetime, shard: int, until: datetime) -> FairRead:
        unreadable: list[UnreadableDue] = []
        items = _readable(self._query(minute, shard, until), unreadable)
        return FairRead(items, frozenset(), tuple(unreadable))

    def read_fair(
        self, minute: datetime, shard: int, until: datetime, page: int, pages: int
    ) -> FairRead:
        """`DueStore.read_fair`'s pages over this partition: a full page skips the rest of its
        last run (one tenant's items due at one instant) and marks that tenant backlogged; when
        the pages run out, the last query reads the newest items instead."""
        found: dict[str, DueItem] = {}
        backlogged: set[str] = set()
        unreadable: list[UnreadableDue] = []
        low: str | None = None
        batch: list[DueItem] = []
        for _ in range(max(1, pages - 1)):
            raw = self._query(minute, shard, until, low=low, limit=page)
            batch = _readable(raw, unreadable)
            found.update((item.due_key, item) for item in batch)
            if len(raw) < page or not batch:
                return FairRead(_by_key(found), frozenset(backlogged), tuple(unreadable))
            last = batch[-1]
            backlogged.add(last.tenant_id)
            low = f"{to_ms(last.due):013d}#{last.tenant_id}$"
        if pages > 1:
            backlogged.update(item.tenant_id for item in batch)
            newest = self._query(minute, shard, until, limit=page, newest=True)
            found.update((item.due_key, item) for item in _readable(newest, unreadable))
        kept = {(u.bucket, u.due_key): u for u in unreadable}
        return FairRead(_by_key(found), frozenset(backlogged), tuple(kept.values()))

    def delete_if_unchanged(self, item: DueItem) -> bool:
        stored = self.items.get((item.bucket, item.due_key))
        if stored is None or stored.get("written_ms") != {"N": str(item.written_ms)}:
            return False
        del self.items[(item.bucket, item.due_key)]
        return True

    def delete_raw(self, bucket: str, due_key: str) -> None:
        self.items.pop((bucket, due_key), None)

    def settle(
        self, read: FairRead, finished: Sequence[DueItem], deleted: Sequence[DueItem] = ()
    ) -> list[DueItem]:
        """No cursor here: every finished item is deleted (`DueStore.settle` without one)."""
        return list(finished)


def _readable(raw: list[Item], unreadable: list[UnreadableDue]) -> list[DueItem]:
    """The items of `raw` that read as due items; the others go to `unreadable` with why."""
    items = []
    for item in raw:
        try:
            items.append(DueItem.from_item(item))
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            bucket, key = item.get("bucket", {}).get("S", ""), item.get("due_key", {}).get("S", "")
            unreadable.append(UnreadableDue(str(bucket), str(key), exc))
    return items


def _by_key(found: dict[str, DueItem]) -> list[DueItem]:
    return [found[key] for key in sorted(found)]


def _invalid(operation: str) -> ClientError:
    """What DynamoDB answers a write it can never accept as written."""
    return ClientError(
        {"Error": {"Code": "ValidationException", "Message": "item refused"}}, operation
    )
