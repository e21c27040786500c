"""The ticker: one sweep of the due index, which the per-second driver (`takt.dispatch.driver`)
runs once a second; each tick fans out one claim per (minute bucket, shard).

It sweeps every bucket from the watermark (the oldest minute that may hold items) to the current
minute, so items left behind by a crash or an outage are found again, and moves the watermark
past a minute once all its shards are empty and it is older than `WATERMARK_LAG` (which covers
clock skew between the functions that write due items and the ticker). Minutes before the previous
one are swept every `BACKLOG_EVERY_SEC`, and a partition of theirs found with something due is
swept on every tick after that until it is empty.

A minute split k ways when its items were written (`takt.store.due`) has N*k partitions, and a
claim is one partition's: k claimers work one hot minute's shard at once. A tick still probes only
a minute's N base shards (the quiet minute's cost). When it knows the minute is split, a base
shard `s` it finds busy has its sub-partitions `s + N*j` claimed beside it without a probe each:
they share its hash class and, the minute being split by its count, hold about as many items
again, so probing them would only tell the ticker what the count already did, at up to N*(k-1)
queries a tick. What a tick knows: a minute's split is read (one strongly consistent batch read of
the tick's minutes) on the ticks where the minute had a partition found busy on the tick before,
and on every SPLIT_SWEEP_EVERY_SEC tick, which probes each sub-partition of every split minute
on its own, so items a sub-partition holds while its base shard is empty (the stragglers of a
minute whose burst is over) are claimed within that period. A tick's work stays bounded: N probes
a minute, at most N*k claims of a busy split minute, and N*k probes once every few seconds.
A tick starts its claims in an order shuffled by its second (`claim_order`), so when more
partitions are busy than claimers are free, no partition is always the last to get one.

Claims are disjoint by construction: there is no leader, and two tickers that overlap only
duplicate work that the claimer's conditional writes make harmless. The deployed drivers
(`takt.dispatch.driver`) still tick only in the seconds they claimed, so they sweep once a second
between them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol, TypeVar

from takt.dispatch.claimer import ClaimResult
from takt.models.ids import format_time
from takt.store.due import SecondClaim, minute_of, minutes_between
from takt.store.ports import SweptDue

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

T = TypeVar("T")

WATERMARK_LAG = timedelta(minutes=2)
BACKLOG_EVERY_SEC = 10
BURST_EVERY_SEC = 5
# A split minute's sub-partitions are each probed on their own this often (module docstring).
SPLIT_SWEEP_EVERY_SEC = 5


@dataclass(frozen=True)
class ClaimTask:
    minute: datetime
    shard: int
    now: datetime
    # A split minute's sub-partitions claimed beside this one when it has something due, each
    # by a claim of its own (module docstring).
    siblings: tuple[int, ...] = ()
    # How many partitions of the minute the tick claims (N*k when it knows the minute is split k
    # ways, else N): a claim's share of the lanes' room is divided by it (docs/FAIRNESS.md).
    # None, as a task built outside a tick is: the claimer takes N.
    partitions: int | None = None

    def to_event(self) -> dict[str, object]:
        event: dict[str, object] = {
            "minute": format_time(self.minute),
            "shard": self.shard,
            "now": format_time(self.now),
        }
        if self.partitions is not None:
            event["partitions"] = self.partitions
        return event

    def family(self) -> list[ClaimTask]:
        """This partition's claim and one for each of its siblings."""
        return [
            ClaimTask(self.minute, shard, self.now, partitions=self.partitions)
            for shard in (self.shard, *self.siblings)
        ]


def claim_order(claims: Sequence[T], second: int) -> list[T]:
    """The order a tick starts its claims in: shuffled, the same way for the same `second`.

    A split top of the hour has more busy partitions than the claimer's reserved concurrency
    runs at once (the seed: 1,024 against 384), and the claims a tick starts first take the
    claimers that are free. In a fixed order the lowest partitions would take them on every
    tick, and the last sub-partitions, which the base shards' longer claims keep waiting, would
    be claimed only once the base shards are drained; shuffled each tick, every busy partition
    has the same chance at a free claimer (docs/CAPACITY.md, "The hot minute split"). The
    capacity simulator starts its claims in this order too."""
    order = list(claims)
    random.Random(second).shuffle(order)  # noqa: S311 - an order, not a secret
    return order


def _claims(tasks: list[ClaimTask]) -> list[ClaimTask]:
    """The claims of `tasks`' families, each partition once (a sweep may list a sibling on its
    own too: two claims of it would only repeat one another's work), in `claim_order`."""
    claims = list(dict.fromkeys(claim for task in tasks for claim in task.family()))
    return claim_order(claims, _second(claims)) if claims else claims


def _second(claims: list[ClaimTask]) -> int:
    """The tick's second, in epoch seconds: what shuffles its claims."""
    return int(claims[0].now.timestamp())


class Fanout(Protocol):
    """Runs claims: in threads of this process, or as asynchronous Lambda invocations."""

    def run(self, tasks: list[ClaimTask]) -> dict[ClaimTask, ClaimResult]:
        """The tasks that found something due, with their claims' results (a claim run
        elsewhere reports an empty result: its figures are its own metrics)."""
        ...


# One claim run inline: (minute, shard, now, partitions the tick claims of the minute).
ClaimCall = Callable[[datetime, int, datetime, int | None], ClaimResult]


class InlineFanout:
    """Claims in a thread pool inside this invocation (the local runtime, small deployments)."""

    def __init__(self, claim: ClaimCall, threads: int):
        self._claim = claim
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="claim")

    def run(self, tasks: list[ClaimTask]) -> dict[ClaimTask, ClaimResult]:
        """Every task's family claimed at once in the pool (a claim is its own probe here)."""
        futures = {
            t: self._pool.submit(self._claim, t.minute, t.shard, t.now, t.partitions)
            for t in _claims(tasks)
        }
        results = {task: future.result() for task, future in futures.items()}
        return {task: result for task, result in results.items() if result.due}


class LambdaFanout:
    """One asynchronous claimer invocation per partition that has something due.

    The ticker probes each partition with a one-item query first: a query costs half a read
    unit, an idle claimer invocation costs a request and a few hundred milliseconds of a function,
    sixty-four times a second. Results come back as the claimers' metrics, not here.
    """

    def __init__(
        self,
        client: LambdaClient,
        function_name: str,
        has_due: Callable[[ClaimTask], bool],
        threads: int,
    ) -> None:
        self._lambda = client
        self._function = function_name
        self._has_due = has_due
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="probe")

    def run(self, tasks: list[ClaimTask]) -> dict[ClaimTask, ClaimResult]:
        busy = _claims(
            [t for t, due in zip(tasks, self._pool.map(self._has_due, tasks), strict=True) if due]
        )
        # In parallel: one asynchronous Invoke takes about 15 ms, so a loop would start the last
        # of 64 busy partitions' claimers about a second after the tick (docs/CAPACITY.md).
        list(self._pool.map(self._invoke, busy))
        return {task: ClaimResult() for task in busy}

    def _invoke(self, task: ClaimTask) -> None:
        self._lambda.invoke(
            FunctionName=self._function,
            InvocationType="Event",
            Payload=json.dumps(task.to_event()).encode(),
        )


@dataclass
class TickResult:
    claims: int = 0
    total: ClaimResult = field(default_factory=ClaimResult)
    watermark: datetime | None = None


class Ticker:
    """Sweeps the due index once a tick (module docstring).

    From `burst_ahead` before a minute, its partitions are swept for the minute's first second
    too (the claimer's `claim_horizon`): every `BURST_EVERY_SEC`, and on every tick those where
    the last sweep found some, so the top-of-minute burst is claimed before it is due while an
    idle deployment probes the next minute only a few times a minute.
    """

    def __init__(
        self,
        due: SweptDue,
        fanout: Fanout,
        max_catchup_buckets: int,
        ahead: timedelta,
        burst_ahead: timedelta = timedelta(0),
    ) -> None:
        self._due = due
        self._fanout = fanout
        self._max_buckets = max_catchup_buckets
        self._ahead = ahead
        self._burst_ahead = burst_ahead
        # Partitions of the next minute whose burst the last sweep found items in: swept on
        # every tick until empty, so a bounded claim's share of a burst drains at its pace.
        self._early: set[tuple[datetime, int]] = set()
        # Partitions of older minutes that had something due at their last sweep: swept again on
        # every tick until found empty, so a backlog (an outage's, or a flood a bounded claim
        # takes a slice of a tick) drains at the claim rate, not one sweep every few seconds.
        self._behind: set[tuple[datetime, int]] = set()
        # The minutes the last tick found something due in: this tick reads their splits.
        self._busy_minutes: set[datetime] = set()
        # The watermark minute and how many of its partitions were found empty in a row: a
        # split minute's are checked N a tick, so one tick's work stays bounded.
        self._emptied: tuple[datetime, int] | None = None

    def tick(self, now: datetime, claim: SecondClaim | None = None) -> TickResult:
        """Sweep what is due at `now`. A driver passes the claim it won for this second, which
        carries the watermark (read in the claim's own write); without one it is read here."""
        current = minute_of(now)
        oldest = current - WATERMARK_LAG
        watermark = claim.watermark if claim is not None else self._due.watermark()
        if watermark is None:
            # First tick of a new deployment: look back as far as one tick may, so jobs created
            # before the scheduler first ran are found.
            watermark = current - timedelta(minutes=self._max_buckets - 1)
            self._due.advance_watermark(watermark)
        minutes = self._minutes(now, current, watermark)
        partitions = {(m, s) for m in minutes for s in range(self._due.shards)} | {
            (m, s) for m, s in self._behind if m >= watermark
        }
        partitions |= self._burst_partitions(now, current)
        tasks = self._tasks(partitions, now)
        result = TickResult(claims=len(_claims(tasks)), watermark=watermark)
        found = self._fanout.run(tasks)
        for found_claim in found.values():
            result.total.add(found_claim)
        recent = current - timedelta(minutes=1)
        # Remembered by base shard: a sibling found busy is reached again through its base.
        busy = {(t.minute, t.shard % self._due.shards) for t in found}
        self._behind = {(m, s) for m, s in busy if m < recent}
        self._early = {(m, s) for m, s in busy if m > current}
        self._busy_minutes = {m for m, _ in busy}
        self._advance_watermark(watermark, oldest, now, result)
        return result

    def _tasks(self, partitions: set[tuple[datetime, int]], now: datetime) -> list[ClaimTask]:
        """The tick's claims of base shards `partitions`, with the sub-partitions of each split
        minute this tick knows of (module docstring): on a sweep tick each on its own, on the
        others as the siblings of its base shard."""
        n = self._due.shards
        sweep = now.second % SPLIT_SWEEP_EVERY_SEC == 0
        minutes = {m for m, _ in partitions}
        known = minutes if sweep else minutes & self._busy_minutes
        splits = self._due.splits(known) if known else {}
        tasks = []
        for minute, shard in sorted(partitions):
            split = splits.get(minute, 1)
            siblings = tuple(shard + n * j for j in range(1, split))
            family = ClaimTask(minute, shard, now, siblings, partitions=n * split)
            tasks.extend(family.family() if sweep else [family])
        return tasks

    def _advance_watermark(
        self, watermark: datetime, oldest: datetime, now: datetime, result: TickResult
    ) -> None:
        """Move the watermark on by a minute once its bucket, older than `oldest`, is empty in
        every partition: its N base shards on one tick, then, read from its count, the
        sub-partitions of a split minute, N a tick from where the last tick stopped. The minute
        passed, its count is no longer read and is set to expire (takt.store.due)."""
        if watermark >= oldest or not all(
            self._due.bucket_empty(watermark, s) for s in range(self._due.shards)
        ):
            return
        n = self._due.shards
        partitions = self._due.partitions(watermark)
        start = self._emptied[1] if self._emptied and self._emptied[0] == watermark else n
        for shard in range(start, min(partitions, start + n)):
            if not self._due.bucket_empty(watermark, shard):
                self._emptied = (watermark, shard)
                return
        if start + n < partitions:
            self._emptied = (watermark, start + n)
            return
        self._emptied = None
        self._due.advance_watermark(watermark + timedelta(minutes=1))
        result.watermark = watermark + timedelta(minutes=1)
        self._due.expire_count(watermark, now)

    def _minutes(self, now: datetime, current: datetime, watermark: datetime) -> set[datetime]:
        """The minute buckets this tick sweeps in every shard."""
        # The previous minute is always swept (a crashed claim there is retried within a
        # second), the next one when the dispatch horizon reaches into it.
        minutes = set(
            minutes_between(
                max(watermark, current - timedelta(minutes=1)), minute_of(now + self._ahead)
            )
        )
        if now.second % BACKLOG_EVERY_SEC == 0:
            # Older minutes hold only what an outage or a writer with a slow clock left behind,
            # so they are swept every few seconds rather than on every tick.
            backlog_end = min(
                current - timedelta(minutes=2),
                watermark + timedelta(minutes=self._max_buckets - 1),
            )
            minutes |= set(minutes_between(watermark, backlog_end))
        return minutes

    def _burst_partitions(self, now: datetime, current: datetime) -> set[tuple[datetime, int]]:
        """The next minute's partitions this tick sweeps for its burst (class docstring)."""
        upcoming = current + timedelta(minutes=1)
        if not self._burst_ahead or now < upcoming - self._burst_ahead:
            return set()
        busy = {(m, s) for m, s in self._early if m == upcoming}
        if now.second % BURST_EVERY_SEC:
            return busy
        return busy | {(upcoming, s) for s in range(self._due.shards)}
