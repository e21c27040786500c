"""The due index: one item per active job at its next run time.

Partition key: `<minute bucket>#<shard>` where the bucket is the UTC minute in which the item must
be claimed and the shard is a stable hash of the job mod N, so a minute with a million due jobs is
spread over N partitions. Sort key: `<due epoch ms>#<tenant>#<job id>`, so "due by now" is one
range query per partition.

An item for an instant already past is written to the current minute's bucket (the sort key keeps
the real due time), because the ticker only sweeps buckets from its watermark forward.

One more item, `meta#watermark`, holds what the per-second drivers share (docs/ARCHITECTURE.md,
"The per-second drivers"): the watermark, the last second a driver claimed, and the scheduled
time of the last minute rule event a driver started for; with resting drivers
(`takt.dispatch.rest`) also the last second a driver rested in and the last wake. Each is moved
forward only, by a conditional update of its own attribute, so they never overwrite one another.

The claims' watch lists (`takt.store.watches`) live in this table too, in `watch#<shard>`
partitions that no claim reads.

A hot minute is split when its items are written (docs/ARCHITECTURE.md, "The due index"). Each
minute has a sampled count, the item `count#<bucket>`: a writer whose item hashes into the
sample (one in `SAMPLE`, by tenant, job and bucket) adds `SAMPLE` to it and reads the sum back in
the same write, so a quiet minute costs one extra write per `SAMPLE` items and a hot minute's size
is known within a few per cent. As the minute grows the sample thins: a writer whose cached split
is k samples one item in SAMPLE*k and adds SAMPLE*k (the samples of a larger k are a subset of a
smaller one's, and each writer's additions still average one per item), so a minute of a million
items costs about 20,000 count writes rather than 62,500, and the count item, which takes every
one of them, stays further below DynamoDB's 1,000 writes a second per item while the hot minute
is written. From the count comes the minute's split k (`split_of`), and an
item of the minute goes to shard `hash mod N*k`. k only grows with the count, and a writer takes
k from a count that was already stored (the sum its own write returned, or a per-process cache
refreshed at most every `COUNT_CACHE_SEC` and only for a minute it writes several items of, else
1), so every item of a minute is in a shard below N*k as
a later consistent read of the count gives it: readers that enumerate `range(partitions(m))`
miss nothing, and an item written with a smaller, stale k is simply in one of the lower shards.

With a claim cursor (`Settings.due_cursor`; docs/CAPACITY.md, "The claim cursor") a claim does
not delete the items it fired: it moves its partition's cursor, the item `~` of the partition
(sorting after every due key), past the run of items from the old cursor on that it read
whole and finished (fired and advanced, or deleted as stale), in one conditional write a claim
(`settle`), and every read of the partition starts after the cursor. The items it passed keep
an expiry (`EXPIRES`, their minute plus `keep_sec`) and the table's time to live removes them.
A cursor may only pass keys no writer can still add: an item due within `late_margin_sec` of
its writer's clock is written as a late item, `~<due epoch ms>#<tenant>#<job id>`, which sorts
after the cursor, is read from the start of its range by every claim and deleted as before.
That rests on every due write committing within `late_margin_sec`, less a claim's reach and
two clock margins, of its writer's clock reading (`Settings`; the due writers are functions
whose timeouts infra/context.py holds below it).

A minute's count item expires through the table's time-to-live attribute (`EXPIRES`), set when
the watermark passes the minute (`expire_count`), not when the count is written. Its readers are
the writers of the minute (until it ends: an item is written to its minute or a later one), the
scale-ahead forecaster (this minute and later), and the ticker and a resting driver, which read
every minute from the watermark on: the ticker's sweeps, its sweep of old minutes every
`BACKLOG_EVERY_SEC` and its watermark check, which reads the split of the watermark's minute
until every one of its partitions is empty. So the longest time after its minute that anything
reads a count is how long the watermark stays at or before it: two minutes
(`WATERMARK_LAG`) when the minute drains as it falls due, and as long as an outage or a backlog
keeps items in it otherwise, with no bound. A time-to-live counted from the minute would have a
split minute left behind by a longer outage read as unsplit, and its items in the other
partitions never claimed; counted from the watermark's pass it can be short, because no reader
looks behind the watermark (each tick reads it in its claim of the second, and the last one to
hold the old value is the tick that moved it): `COUNT_KEEP_SEC`, a day, covers that tick and any
difference between this clock and DynamoDB's many times over.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from takt.models.ids import from_ms, to_ms
from takt.observability import logger
from takt.store.batch import batch_get, batch_put
from takt.store.errors import StoreUnavailableError, is_condition_failure
from takt.store.watches import WatchStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BUCKET_FORMAT = "%Y%m%d%H%M"
_META_KEY = {"bucket": {"S": "meta#watermark"}, "due_key": {"S": "-"}}
_WATERMARK = "minute"
_TICK = "tick"
_STARTED = "started"
_REST = "rest"
_WOKE = "woke"
_WOKE_SECOND = "woke_second"
COUNT_PREFIX = "count#"
_COUNT = "n"
# One due write in SAMPLE adds SAMPLE to its minute's count.
SAMPLE = 16
# A writer that did not sample takes its minute's count from a cache at most this old.
COUNT_CACHE_SEC = 5.0
# ... and reads the count again only once it has written this many unsampled items of the minute
# since it last knew it: a minute a process writes a few items of is never read for them.
READ_AFTER_WRITES = 4
# Minutes a writer's cache holds before it starts over (each entry is a few dozen bytes).
COUNT_CACHE_MINUTES = 4096
# The due table's time-to-live attribute (takt.resources.DUE): only a count item carries it.
EXPIRES = "expires_at"
# How long a minute's count item outlives the watermark's pass (module docstring).
COUNT_KEEP_SEC = 24 * 3600
# The partition's cursor item, and the prefix of its late items' keys (module docstring): both
# sort after every `<due epoch ms>#...` key, the cursor before every late item.
CURSOR_KEY = "~"
LATE = "~"
_AT = "at"
# Above every key of a partition's items written ahead ('}' follows the digits, precedes '~').
_AHEAD_END = "}"


def minute_of(instant: datetime) -> datetime:
    return instant.astimezone(UTC).replace(second=0, microsecond=0)


def bucket_name(minute: datetime) -> str:
    return minute.strftime(BUCKET_FORMAT)


def bucket_minute(name: str) -> datetime:
    """The minute a bucket name (`bucket_name`, or a partition `<bucket>#<shard>`) is of."""
    return datetime.strptime(name.split("#", 1)[0], BUCKET_FORMAT).replace(tzinfo=UTC)


def shard_of(tenant_id: str, job_id: str, shards: int) -> int:
    return zlib.crc32(f"{tenant_id}#{job_id}".encode()) % shards


def split_of(count: int, shards: int, items: int, most: int) -> int:
    """A minute's split: the smallest power of two k with `shards`*k*`items` >= `count`, at most
    `most`. It never shrinks as the count grows, which is what keeps a stale k safe."""
    k = 1
    while k < most and shards * k * items < count:
        k *= 2
    return min(k, most)


def sampled(tenant_id: str, job_id: str, bucket: str, every: int = SAMPLE) -> bool:
    """Whether the writer of this job's item in `bucket` adds to the bucket's count: one in
    `every`, fixed by the key so a rewrite of the same item samples the same way."""
    return zlib.crc32(f"{tenant_id}#{job_id}#{bucket}".encode()) % every == 0


def count_expiry(now: datetime) -> int:
    """When a count item the watermark passed at `now` expires, in epoch seconds (the unit
    DynamoDB's time to live reads)."""
    return to_ms(now) // 1000 + COUNT_KEEP_SEC


def count_key(minute: datetime) -> dict[str, dict[str, str]]:
    """The key of a minute's sampled count item."""
    return {"bucket": {"S": f"{COUNT_PREFIX}{bucket_name(minute)}"}, "due_key": {"S": "-"}}


class SplitWriter:
    """A writer's split of each minute it writes (module docstring), from the sum its own count
    write returns when it samples, else from its cache (read again once older than
    COUNT_CACHE_SEC, and only for a minute it has written READ_AFTER_WRITES unsampled items of
    since: a recurring job's next occurrences land in many minutes a few items each, and a read
    for each would cost more than counting does). The store's writers and the tests' in-memory
    due table share it.

    Counting is best effort: a count write or read that fails (the count item takes every
    sampled write of its minute, so the top of the hour may throttle it) leaves the cached count,
    which is never more than the stored one, and the due item is written anyway.
    """

    def __init__(
        self,
        split: Callable[[int], int],
        most: int,
        add: Callable[[datetime, int], int],
        read: Callable[[datetime], int],
        monotonic: Callable[[], float],
    ) -> None:
        self._split = split
        self._most = most
        self._add = add
        self._read = read
        self._monotonic = monotonic
        self._counts: dict[str, tuple[int, float]] = {}
        # Unsampled writes of each minute since its count was last known (READ_AFTER_WRITES).
        self._unread: dict[str, int] = {}

    def split(self, tenant_id: str, job_id: str, minute: datetime) -> int:
        bucket = bucket_name(minute)
        cached = self._counts.get(bucket)
        split = self._split(cached[0]) if cached is not None else 1
        if split >= self._most:
            return split  # Nothing the count could add: it only grows.
        now = self._monotonic()
        try:
            # The sample thins as the split grows (module docstring).
            every = SAMPLE * split
            if sampled(tenant_id, job_id, bucket, every):
                count = self._add(minute, every)
            elif self._stale(bucket, cached, now):
                count = self._read(minute)
            else:
                return split
        except (ClientError, BotoCoreError) as exc:
            logger.warning("due count not written or read: the cached split stays", error=str(exc))
            return split
        if len(self._counts) >= COUNT_CACHE_MINUTES:
            self._counts.clear()
            self._unread.clear()
        self._counts[bucket] = (count, now)
        self._unread.pop(bucket, None)
        return self._split(count)

    def _stale(self, bucket: str, cached: tuple[int, float] | None, now: float) -> bool:
        """Whether an unsampled write reads its minute's count: only once the cache is older
        than COUNT_CACHE_SEC (or empty) and READ_AFTER_WRITES such writes came since, so the
        quiet minutes a process writes one or two items of cost it no read."""
        if len(self._unread) >= COUNT_CACHE_MINUTES:
            self._unread.clear()
        unread = self._unread.get(bucket, 0) + 1
        if unread < READ_AFTER_WRITES or (cached is not None and now - cached[1] < COUNT_CACHE_SEC):
            self._unread[bucket] = unread
            return False
        return True


@dataclass(frozen=True)
class DueItem:
    bucket: str
    due_key: str
    tenant_id: str
    job_id: str
    due: datetime
    written_ms: int

    @property
    def late(self) -> bool:
        """Whether it was written close to its time, where no cursor passes (module docstring)."""
        return self.due_key.startswith(LATE)

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> DueItem:
        due_ms, tenant_id, job_id = item["due_key"]["S"].removeprefix(LATE).split("#", 2)
        return cls(
            bucket=item["bucket"]["S"],
            due_key=item["due_key"]["S"],
            tenant_id=tenant_id,
            job_id=job_id,
            due=from_ms(int(due_ms)),
            written_ms=int(item.get("written_ms", {"N": "0"})["N"]),
        )


@dataclass(frozen=True)
class DueCursor:
    """How a store with a claim cursor writes its items (module docstring): which are late, and
    when the items a cursor passed expire."""

    late_margin_sec: float
    keep_sec: float

    def late(self, due: datetime, now: datetime) -> bool:
        """Whether an item due at `due` written at `now` is a late item."""
        return due < now + timedelta(seconds=self.late_margin_sec)

    def expiry(self, minute: datetime) -> int:
        """When the items of `minute` (and its cursors) expire, in epoch seconds."""
        return to_ms(minute) // 1000 + int(self.keep_sec)


@dataclass(frozen=True)
class _Page:
    """The readable items of a query (the cursor item apart), how many it read, and the
    cursor, when it read the cursor item."""

    items: list[DueItem]
    read: int
    cursor: str | None = None


@dataclass(frozen=True)
class _FairRange:
    items: list[DueItem]
    backlogged: frozenset[str]
    cursor: str | None
    whole_through: str


@dataclass(frozen=True)
class SecondClaim:
    """What a driver's claim of one second found: whether it won the second, and, when it did,
    the watermark, read in the same write (so a tick needs no read of its own for it)."""

    won: bool
    watermark: datetime | None = None


@dataclass(frozen=True)
class UnreadableDue:
    """A due item that does not read as one, by its key (blank where the key is missing too),
    with why: the claimer parks it in quarantine and deletes it (`delete_raw`)."""

    bucket: str
    due_key: str
    error: Exception


@dataclass(frozen=True)
class FairRead:
    """What `DueStore.read_fair` read, oldest first, and the tenants it left items of unread
    (a run it skipped, or a page it had no query left to read past)."""

    items: list[DueItem]
    backlogged: frozenset[str]
    # Items of the partition that cannot be read, with why: the claimer quarantines them.
    unreadable: tuple[UnreadableDue, ...] = ()
    # With a claim cursor (`DueStore.settle`): the partition read, the cursor it read from ("":
    # none yet) and the last key up to which it read every item written ahead.
    partition: str | None = None
    cursor: str = ""
    whole_through: str = ""


@dataclass(frozen=True)
class DueCount:
    """What `DueStore.count_bucket` counted, and whether it read the whole partition."""

    count: int
    complete: bool


class DueStore:
    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        shards: int,
        split_items: int = 2000,
        split_max: int = 16,
        monotonic: Callable[[], float] = time.monotonic,
        cursor: DueCursor | None = None,
    ) -> None:
        self._db = client
        # With a claim cursor, how late items are told apart and how long passed ones stay.
        self.cursor = cursor
        self._table = table
        self.shards = shards
        self.split_items = split_items
        self.split_max = split_max
        self._writer = SplitWriter(
            self._split, split_max, self._add_count, self._read_count, monotonic
        )
        # The claims' watch lists share the table, in partitions of their own.
        self.watches = WatchStore(client, table, shards)
        # Whether each minute whose split `splits` read last had a count item: the ticker reads
        # the watermark's split just before it passes the minute, so `expire_count` knows an
        # uncounted minute without a write (most minutes of a quiet deployment are).
        self._counted: dict[datetime, bool] = {}

    def put(self, tenant_id: str, job_id: str, due: datetime, now: datetime) -> None:
        """Index a job at `due`; idempotent (same key, same item)."""
        self._db.put_item(TableName=self._table, Item=self.item(tenant_id, job_id, due, now))

    def put_many(self, entries: Sequence[tuple[str, str, datetime]], now: datetime) -> None:
        """Index each (tenant, job, due) of `entries` as `put` does, in BatchWriteItem requests
        (`takt.store.batch.batch_put`): the same unconditional puts at the same write units, in
        a call per 25 items rather than one each (a claim's next occurrences, step 3)."""
        items = {}
        for tenant_id, job_id, due in entries:
            item = self.item(tenant_id, job_id, due, now)
            items[(item["bucket"]["S"], item["due_key"]["S"])] = item
        batch_put(self._db, self._table, list(items.values()))

    def item(self, tenant_id: str, job_id: str, due: datetime, now: datetime) -> dict[str, Any]:
        """The due item `put` writes (`takt bench noisy` writes a flood of them in batches),
        in the shard its minute's split gives it (module docstring)."""
        minute = max(minute_of(due), minute_of(now))
        split = self._writer.split(tenant_id, job_id, minute) if self.split_max > 1 else 1
        shard = shard_of(tenant_id, job_id, self.shards * split)
        key = f"{to_ms(due):013d}#{tenant_id}#{job_id}"
        item = {
            "bucket": {"S": f"{bucket_name(minute)}#{shard:03d}"},
            "due_key": {"S": key},
            "written_ms": {"N": str(to_ms(now))},
        }
        if self.cursor is not None:
            if self.cursor.late(due, now):
                item["due_key"] = {"S": LATE + key}
            item[EXPIRES] = {"N": str(self.cursor.expiry(minute))}
        return item

    def _add_count(self, minute: datetime, amount: int) -> int:
        """Add `amount` to the minute's count; the sum, as stored after this write."""
        resp = self._db.update_item(
            TableName=self._table,
            Key=count_key(minute),
            UpdateExpression="ADD #n :s",
            ExpressionAttributeNames={"#n": _COUNT},
            ExpressionAttributeValues={":s": {"N": str(amount)}},
            ReturnValues="UPDATED_NEW",
        )
        return int(resp["Attributes"][_COUNT]["N"])

    def _read_count(self, minute: datetime) -> int:
        """The minute's count, read eventually consistent: a writer's, whose stale value only
        puts its item in a lower shard."""
        return self._read_counts([minute], consistent=False)[minute]

    def _split(self, count: int) -> int:
        return split_of(count, self.shards, self.split_items, self.split_max)

    def splits(self, minutes: Iterable[datetime]) -> dict[datetime, int]:
        """Each minute's split as its count stands now, read strongly consistent: a reader that
        enumerates `shards * split` partitions of a minute sees every item written before."""
        wanted = sorted(set(minutes))
        if self.split_max <= 1 or not wanted:
            return dict.fromkeys(wanted, 1)
        counts = self._read_counts(wanted, consistent=True)
        if len(self._counted) >= COUNT_CACHE_MINUTES:
            self._counted.clear()
        self._counted.update((minute, count > 0) for minute, count in counts.items())
        return {minute: self._split(count) for minute, count in counts.items()}

    def partitions(self, minute: datetime) -> int:
        """How many partitions of `minute` hold its items: N times its split (`splits`)."""
        return self.shards * self.splits([minute])[minute]

    def _read_counts(self, minutes: list[datetime], *, consistent: bool) -> dict[datetime, int]:
        """The stored counts of `minutes` (0 for a minute nothing counted), read with
        `takt.store.batch.batch_get` (its key limit, and a backoff for what DynamoDB leaves
        unprocessed)."""
        by_bucket = {f"{COUNT_PREFIX}{bucket_name(m)}": m for m in minutes}
        counts = dict.fromkeys(minutes, 0)
        keys = [count_key(m) for m in minutes]
        for item in batch_get(self._db, self._table, keys, ConsistentRead=consistent):
            counts[by_bucket[item["bucket"]["S"]]] = int(item.get(_COUNT, {"N": "0"})["N"])
        return counts

    def query_due(self, minute: datetime, shard: int, until: datetime) -> list[DueItem]:
        """Every item of one (bucket, shard) partition due at or before `until`, oldest first."""
        return self.read_due(minute, shard, until).items

    def read_due(self, minute: datetime, shard: int, until: datetime) -> FairRead:
        """`query_due`, with the items that cannot be read set apart rather than raised."""
        partition = _partition(minute, shard)
        unreadable: list[UnreadableDue] = []
        high = _until_key(until)
        if self.cursor is None:
            items = self._read_range(partition, None, high, unreadable).items
            return FairRead(items, frozenset(), tuple(unreadable))
        late = self._read_range(partition, CURSOR_KEY, LATE + high, unreadable)
        ahead = self._read_range(partition, late.cursor, high, unreadable)
        return FairRead(
            sorted([*ahead.items, *late.items], key=_by_due_key),
            frozenset(),
            tuple(unreadable),
            partition=partition,
            cursor=late.cursor or "",
            whole_through=high,
        )

    def _read_range(
        self, partition: str, low: str | None, high: str, unreadable: list[UnreadableDue]
    ) -> _Page:
        """Every item of the partition from `low` (past it when it is the cursor) to `high`."""
        kwargs = self._due_by(partition, high, low=low)
        pages: list[_Page] = []
        while True:
            resp = self._db.query(**kwargs)
            pages.append(_page_of(resp.get("Items", []), low, unreadable))
            if "LastEvaluatedKey" not in resp:
                return _Page(
                    [item for page in pages for item in page.items],
                    sum(page.read for page in pages),
                    pages[0].cursor,
                )
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def read_fair(
        self, minute: datetime, shard: int, until: datetime, page: int, pages: int
    ) -> FairRead:
        """Up to `pages` queries of `page` items of one partition's due items: what a bounded
        claim chooses from (docs/FAIRNESS.md).

        Oldest first, but a full page skips the rest of its last item's run (the items of one
        tenant due at one instant, which sort together), so a tenant's flood due at one instant
        costs one page, not a read of the whole flood, and the items behind it (other tenants',
        and the flood's own later ones) are reached. When the pages run out with items still
        unread, the last query reads the newest items due instead, so what fell due last (a
        quiet tenant's fresh items) is seen even behind a backlog spread over many instants.
        The read costs at most `pages` queries whatever the backlog; with a claim cursor, as
        many again for the late items (module docstring), which are read first, with the cursor.
        """
        partition = _partition(minute, shard)
        unreadable: list[UnreadableDue] = []
        high = _until_key(until)
        if self.cursor is None:
            fair = self._fair_range(partition, None, high, page, pages, unreadable)
            return FairRead(fair.items, fair.backlogged, _distinct(unreadable))
        late = self._fair_range(partition, CURSOR_KEY, LATE + high, page, pages, unreadable)
        ahead = self._fair_range(partition, late.cursor, high, page, pages, unreadable)
        return FairRead(
            sorted([*ahead.items, *late.items], key=_by_due_key),
            ahead.backlogged | late.backlogged,
            _distinct(unreadable),
            partition=partition,
            cursor=late.cursor or "",
            whole_through=ahead.whole_through,
        )

    def _fair_range(
        self,
        partition: str,
        low: str | None,
        high: str,
        page: int,
        pages: int,
        unreadable: list[UnreadableDue],
    ) -> _FairRange:
        """`read_fair` of the partition's keys from `low` (past it when it is the cursor) to
        `high`."""
        found: dict[str, DueItem] = {}
        backlogged: set[str] = set()
        start = low
        cursor: str | None = None
        whole_through = high
        for query in range(max(1, pages - 1)):
            batch = self._page(partition, high, page, low=start, after=low, unreadable=unreadable)
            cursor = batch.cursor if query == 0 else cursor
            found.update((item.due_key, item) for item in batch.items)
            if batch.read < page or not batch.items:
                # (A full page of unreadable items: they are parked, and the next claim reads on.)
                return _FairRange(
                    _oldest_first(found), frozenset(backlogged), cursor, whole_through
                )
            last = batch.items[-1]
            if query == 0:
                whole_through = last.due_key
            backlogged.add(last.tenant_id)
            # '$' follows '#': the first key after every `<due>#<tenant>#...` of this run.
            start = f"{LATE if last.late else ''}{to_ms(last.due):013d}#{last.tenant_id}$"
        if pages > 1:
            # The pages ran out: any tenant of the last one may have more behind it.
            backlogged.update(item.tenant_id for item in batch.items)
            newest = self._page(
                partition, high, page, low=low, after=low, newest=True, unreadable=unreadable
            )
            found.update((item.due_key, item) for item in newest.items)
        return _FairRange(_oldest_first(found), frozenset(backlogged), cursor, whole_through)

    def _page(
        self,
        partition: str,
        high: str,
        limit: int,
        *,
        low: str | None,
        after: str | None,
        unreadable: list[UnreadableDue],
        newest: bool = False,
    ) -> _Page:
        """One page's readable items past `after` (the others added to `unreadable`)."""
        resp = self._db.query(
            **self._due_by(partition, high, low=low), Limit=limit, ScanIndexForward=not newest
        )
        return _page_of(resp.get("Items", []), after, unreadable)

    def _due_by(self, partition: str, high: str, low: str | None = None) -> dict[str, Any]:
        """The query for one partition's keys up to `high` (and from `low`, when given)."""
        values = {":b": {"S": partition}, ":u": {"S": high}}
        condition = "#b = :b AND due_key <= :u"
        if low is not None:
            condition = "#b = :b AND due_key BETWEEN :l AND :u"
            values[":l"] = {"S": low}
        return {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {"#b": "bucket"},
            "ExpressionAttributeValues": values,
            "ConsistentRead": True,
        }

    def has_due(self, minute: datetime, shard: int, until: datetime) -> bool:
        """Whether one (bucket, shard) partition holds anything due by `until` (one-item read;
        with a claim cursor, the late items and the cursor first, then one past the cursor)."""
        # A probe, eventually consistent: half a read unit (a miss is found on the next tick).
        partition = _partition(minute, shard)
        high = _until_key(until)
        if self.cursor is None:
            return self._any(partition, None, high)
        late = self._probe(partition, CURSOR_KEY, LATE + high)
        return bool(late.items) or self._any(partition, late.cursor, high)

    def _probe(self, partition: str, low: str | None, high: str) -> _Page:
        """The first items of the partition from `low` to `high`, read eventually consistent:
        two, so the cursor (or the item it passed last) does not hide the one after it."""
        query = {**self._due_by(partition, high, low=low), "ConsistentRead": False}
        return _page_of(self._db.query(**query, Limit=2).get("Items", []), low, [])

    def _any(self, partition: str, after: str | None, high: str) -> bool:
        if after is not None:
            return bool(self._probe(partition, after, high).items)
        query = {**self._due_by(partition, high), "ConsistentRead": False}
        return self._db.query(**query, Limit=1, Select="COUNT").get("Count", 0) > 0

    def count_bucket(self, minute: datetime, shard: int, max_pages: int) -> DueCount:
        """How many items one (bucket, shard) partition holds, read with at most `max_pages`
        eventually consistent COUNT queries (each reads up to 1 MB, about 9,000 items).

        A forecast, not a claim: an item written or claimed meanwhile may be miscounted, and a
        partition larger than the pages allow is reported as a lower bound (`complete` False),
        so the cost of counting stays bounded however large the minute is. (With a claim cursor
        a minute claims already started on also counts the items they passed.)
        """
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#b = :b",
            "ExpressionAttributeNames": {"#b": "bucket"},
            "ExpressionAttributeValues": {":b": {"S": _partition(minute, shard)}},
            "Select": "COUNT",
        }
        count = 0
        for _ in range(max_pages):
            resp = self._db.query(**kwargs)
            count += resp.get("Count", 0)
            if "LastEvaluatedKey" not in resp:
                return DueCount(count, complete=True)
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        return DueCount(count, complete=False)

    def bucket_empty(self, minute: datetime, shard: int) -> bool:
        """Whether one (bucket, shard) partition holds nothing left to claim (with a claim
        cursor: no late item, and nothing past the cursor)."""
        partition = _partition(minute, shard)
        if self.cursor is None:
            resp = self._db.query(
                TableName=self._table,
                KeyConditionExpression="#b = :b",
                ExpressionAttributeNames={"#b": "bucket"},
                ExpressionAttributeValues={":b": {"S": partition}},
                Limit=1,
                ConsistentRead=True,
                Select="COUNT",
            )
            return resp.get("Count", 0) == 0
        late = self._read_first(partition, CURSOR_KEY, LATE + _AHEAD_END)
        if late.items:
            return False
        return not self._read_first(partition, late.cursor, _AHEAD_END).items

    def _read_first(self, partition: str, low: str | None, high: str) -> _Page:
        """The first two items of the partition from `low` to `high`, read consistently."""
        resp = self._db.query(**self._due_by(partition, high, low=low), Limit=2)
        return _page_of(resp.get("Items", []), low, [])

    def settle(
        self, read: FairRead, finished: Sequence[DueItem], deleted: Sequence[DueItem] = ()
    ) -> list[DueItem]:
        """Of the items a claim `finished` (fired and advanced), those it must still delete: all
        of them without a claim cursor; with one, those the cursor does not pass. The items it
        `deleted` (stale) count as finished for the cursor, and are never returned. The cursor
        passes the run of finished items that starts where `read` read from, up to the first
        item left or read only in part (`whole_through`); it moves with one write conditional on
        being where the read found it, and when another claim moved it meanwhile every finished
        item is deleted instead (module docstring)."""
        if read.partition is None:
            return list(finished)
        done = {item.due_key for item in (*finished, *deleted)}
        passed = read.cursor
        for item in read.items:
            if item.late or item.due_key > read.whole_through or item.due_key not in done:
                break
            passed = item.due_key
        if passed == read.cursor or not self._pass(read.partition, read.cursor, passed):
            return list(finished)
        return [item for item in finished if item.late or item.due_key > passed]

    def _pass(self, partition: str, cursor: str, to: str) -> bool:
        """Move the partition's cursor from `cursor` ("": none yet) to `to`; False when another
        claim moved it first."""
        assert self.cursor is not None
        minute = bucket_minute(partition)
        condition = "attribute_not_exists(#at)" if not cursor else "#at = :c"
        values = {":to": {"S": to}, ":e": {"N": str(self.cursor.expiry(minute))}}
        if cursor:
            values[":c"] = {"S": cursor}
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"bucket": {"S": partition}, "due_key": {"S": CURSOR_KEY}},
                UpdateExpression="SET #at = :to, #e = :e",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#at": _AT, "#e": EXPIRES},
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return False
        return True

    def delete_if_unchanged(self, item: DueItem) -> bool:
        """Delete an item unless it was rewritten since it was read (then it is someone's new
        index entry and stays: False)."""
        try:
            self._db.delete_item(
                TableName=self._table,
                Key={"bucket": {"S": item.bucket}, "due_key": {"S": item.due_key}},
                ConditionExpression="written_ms = :w",
                ExpressionAttributeValues={":w": {"N": str(item.written_ms)}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return False
        return True

    def delete_raw(self, bucket: str, due_key: str) -> None:
        """Delete an item by its key, whatever it holds (one that cannot be read, parked)."""
        self._db.delete_item(
            TableName=self._table,
            Key={"bucket": {"S": bucket}, "due_key": {"S": due_key}},
        )

    def watermark(self) -> datetime | None:
        """The oldest minute bucket that may still hold items (None: never written)."""
        resp = self._db.get_item(TableName=self._table, Key=_META_KEY, ConsistentRead=True)
        return _watermark_of(resp.get("Item", {}))

    def advance_watermark(self, to_minute: datetime) -> None:
        """Move the watermark forward only; a slower ticker can never move it back."""
        try:
            self._advance(_WATERMARK, {"S": bucket_name(to_minute)})
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def expire_count(self, minute: datetime, now: datetime) -> None:
        """Have the minute's count item, if it has one, expire COUNT_KEEP_SEC after `now`: the
        watermark has just passed the minute, and no reader looks behind it (module docstring).

        Best effort: a write that fails leaves the item without an expiry, which costs its few
        bytes of storage and nothing else, so the tick that moved the watermark goes on."""
        if self._counted.get(minute) is False:
            return  # Read with no count item just before: nothing to expire, no write.
        try:
            self._db.update_item(
                TableName=self._table,
                Key=count_key(minute),
                UpdateExpression="SET #e = :e",
                # Only a counted minute has an item: an update would create one otherwise.
                ConditionExpression="attribute_exists(#n)",
                ExpressionAttributeNames={"#e": EXPIRES, "#n": _COUNT},
                ExpressionAttributeValues={":e": {"N": str(count_expiry(now))}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                logger.warning("due count expiry not written", error=str(exc))
        except BotoCoreError as exc:
            logger.warning("due count expiry not written", error=str(exc))

    def claim_second(self, second: datetime) -> SecondClaim:
        """Claim the whole second `second` falls in for one driver's tick: exactly one claim of
        a second wins, and none of a second before the last one won.

        Every driver claims every second and only the winner ticks, so two drivers cost one
        sweep of the due index a second, and while either lives every second is swept. A driver
        whose clock runs behind the others' loses until they stop, which is what it should do.
        """
        epoch_sec = to_ms(second) // 1000
        try:
            resp = self._advance(_TICK, {"N": str(epoch_sec)}, returns=True)
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise StoreUnavailableError(f"second {epoch_sec} not claimed: {exc}") from exc
            return SecondClaim(won=False)
        except BotoCoreError as exc:
            raise StoreUnavailableError(f"second {epoch_sec} not claimed: {exc}") from exc
        return SecondClaim(won=True, watermark=_watermark_of(resp.get("Attributes", {})))

    def second_claimed(self, second: datetime) -> bool:
        """Whether some driver has claimed `second` (or a later one): a follower's look before
        it claims, at half a read unit where a lost claim costs a write unit."""
        try:
            resp = self._db.get_item(
                TableName=self._table,
                Key=_META_KEY,
                ProjectionExpression="#t",
                ExpressionAttributeNames={"#t": _TICK},
            )
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailableError(f"the claimed second not read: {exc}") from exc
        claimed = resp.get("Item", {}).get(_TICK)
        return claimed is not None and int(claimed["N"]) >= to_ms(second) // 1000

    def claim_start(self, scheduled: datetime) -> bool:
        """Claim the start of the driver for the minute rule's event scheduled at `scheduled`:
        False for a second delivery of the same event (EventBridge delivers at least once) or a
        late one older than an event already started, whose driver should not run."""
        try:
            self._advance(_STARTED, {"S": scheduled.astimezone(UTC).strftime("%Y%m%dT%H%M%S")})
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return False
        return True

    def rest(self, now: datetime) -> None:
        """Record that a driver rests from `now` on (`takt.dispatch.rest`): until a driver
        claims a later second, none is awake."""
        try:
            self._advance(_REST, {"N": str(to_ms(now))})
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def driver_awake(self, now: datetime, within_sec: int) -> bool:
        """Whether a driver claimed a second in the last `within_sec` seconds and has not rested
        since; read strongly consistent, after the caller's own write (`takt.dispatch.rest`)."""
        resp = self._db.get_item(
            TableName=self._table,
            Key=_META_KEY,
            ConsistentRead=True,
            ProjectionExpression="#t, #r",
            ExpressionAttributeNames={"#t": _TICK, "#r": _REST},
        )
        item = resp.get("Item", {})
        if _TICK not in item:
            return False
        tick = int(item[_TICK]["N"])
        rested = _REST in item and int(item[_REST]["N"]) >= tick * 1000
        return not rested and tick >= to_ms(now) // 1000 - within_sec

    def claim_wake(self, now: datetime) -> bool:
        """Claim the start of a driver at `now`: False while an earlier wake is unanswered, that
        is, no driver has claimed a later second than the wake's or rested after it since. The
        driver that wake starts looks at the index after everything its caller and this one
        wrote before it."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key=_META_KEY,
                UpdateExpression="SET #w = :ms, #ws = :sec",
                ConditionExpression=(
                    "attribute_not_exists(#w) OR attribute_not_exists(#t) OR #ws < #t"
                    " OR (attribute_exists(#r) AND #w < #r)"
                ),
                ExpressionAttributeNames={
                    "#w": _WOKE,
                    "#ws": _WOKE_SECOND,
                    "#t": _TICK,
                    "#r": _REST,
                },
                ExpressionAttributeValues={
                    ":ms": {"N": str(to_ms(now))},
                    ":sec": {"N": str(to_ms(now) // 1000)},
                },
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return False
        return True

    def _advance(
        self, attribute: str, value: dict[str, str], *, returns: bool = False
    ) -> dict[str, Any]:
        """Set one attribute of the meta item, only forward (raises the condition failure)."""
        resp = self._db.update_item(
            TableName=self._table,
            Key=_META_KEY,
            UpdateExpression="SET #a = :v",
            ConditionExpression="attribute_not_exists(#a) OR #a < :v",
            ExpressionAttributeNames={"#a": attribute},
            ExpressionAttributeValues={":v": value},
            ReturnValues="ALL_NEW" if returns else "NONE",
        )
        return dict(resp)


def _watermark_of(item: Mapping[str, Any]) -> datetime | None:
    if _WATERMARK not in item:
        return None
    return bucket_minute(item[_WATERMARK]["S"])


def _readable(raw: list[dict[str, Any]], unreadable: list[UnreadableDue]) -> list[DueItem]:
    """The items of `raw` that read as due items; the others go to `unreadable` with why."""
    items = []
    for item in raw:
        try:
            items.append(DueItem.from_item(item))
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            unreadable.append(
                UnreadableDue(
                    bucket=str(item.get("bucket", {}).get("S", "")),
                    due_key=str(item.get("due_key", {}).get("S", "")),
                    error=exc,
                )
            )
    return items


def _page_of(
    raw: list[dict[str, Any]], after: str | None, unreadable: list[UnreadableDue]
) -> _Page:
    """A query's items as a page: the cursor item read as the cursor, the item at `after` (the
    one the cursor passed last) left out, and the rest as `_readable` reads them."""
    cursor: str | None = None
    rest = []
    for item in raw:
        key = item.get("due_key", {}).get("S")
        if key == CURSOR_KEY:
            cursor = item.get(_AT, {}).get("S")
        elif after is None or key != after:
            rest.append(item)
    return _Page(_readable(rest, unreadable), len(raw), cursor)


def _partition(minute: datetime, shard: int) -> str:
    return f"{bucket_name(minute)}#{shard:03d}"


def _until_key(until: datetime) -> str:
    """The highest key of an item due by `until`: '~' sorts after every '#<tenant>#<job>'
    suffix of the same millisecond."""
    return f"{to_ms(until):013d}~"


def _distinct(unreadable: list[UnreadableDue]) -> tuple[UnreadableDue, ...]:
    return tuple({(u.bucket, u.due_key): u for u in unreadable}.values())


def _oldest_first(found: Mapping[str, DueItem]) -> list[DueItem]:
    return sorted(found.values(), key=_by_due_key)


def _by_due_key(item: DueItem) -> str:
    return item.due_key


def minutes_between(first: datetime, last: datetime) -> list[datetime]:
    """Every minute from `first` to `last` inclusive."""
    out = []
    minute = minute_of(first)
    while minute <= last:
        out.append(minute)
        minute += timedelta(minutes=1)
    return out
