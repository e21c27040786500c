"""Resting drivers: a driver that finds nothing to dispatch soon ends its invocation early, and
the indexer starts one when it indexes a job due before the next minute's driver looks.

A deployment with `driver_rest` on (the small profile, docs/DEPLOY.md "Profiles") runs one
driver a minute (`infra/driver.py`). Without rest it lives the whole minute sweeping an empty
index, which is most of the small profile's idle cost. With rest, the driver ends once nothing is
in the due index from the watermark through the next minute, in any shard: whatever is due
later is in a minute the next minute's driver, which the rule starts within seconds of it, sweeps
from its first second. What rest adds is the case of a due item written after the driver ended
for a time before the next one starts: a job created or edited to run within the minute, a run
the API triggers now. The indexer, which writes every such item the API causes, starts a driver
for it (`Waker`), so its lateness is the stream's and the start's (seconds), not the minute's.

The two sides are ordered so that one of them always sees the other: the driver records its rest
(`DueStore.rest`) and then looks at the index once more, strongly consistent; the indexer puts
the due item and then reads, strongly consistent, whether a driver is awake (claimed a second
lately and did not rest since). Whichever write comes second, its writer's read sees the first:
either the driver finds the item and goes on, or the indexer finds no driver awake and starts
one. Both may happen, which costs one extra short invocation. A wake is not repeated while an
earlier one is unanswered (`DueStore.claim_wake`): the driver it starts sees every item put
before it, and a burst of creates starts one driver, not one each.

Writers other than the indexer are covered without a wake: the claimer puts a recurring job's
next item before it deletes the one it claimed, so the index is never empty while a claim is in
flight; the reconciler repairs items minutes old, where a minute more is the same order of delay.
An item that stays in the index while not due (one that cannot be planned waits for quarantine)
keeps the driver awake, at the cost of a driver without rest.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from botocore.exceptions import BotoCoreError, ClientError

from takt.clock import Clock
from takt.observability import logger
from takt.store.due import DueStore, minute_of, minutes_between

# A driver that claimed a second this recently and did not rest since is taken as alive: the
# claims come every second, so a driver that died stops counting as awake within this.
AWAKE_WITHIN_SEC = 3
# The minute's driver starts this long after the minute at most (the rule's lateness and a cold
# start, as `infra.driver.HANDOVER_SEC`): an item due before it is the indexer's to wake for.
NEXT_DRIVER_LATENESS = timedelta(seconds=10)


class Rest:
    """Whether the driver that just ticked may end its invocation (module docstring)."""

    def __init__(self, due: DueStore, max_buckets: int) -> None:
        self._due = due
        self._max_buckets = max_buckets

    def settles(self, now: datetime, watermark: datetime | None) -> bool:
        """Record a rest and return True when the index is empty from `watermark` through the
        minute after `now`, before the record and again after it; False to keep ticking."""
        if not self._quiet(now, watermark):
            return False
        self._due.rest(now)
        return self._quiet(now, watermark)

    def _quiet(self, now: datetime, watermark: datetime | None) -> bool:
        if watermark is None:
            return False
        current = minute_of(now)
        minutes = minutes_between(watermark, current + timedelta(minutes=1))
        if len(minutes) > self._max_buckets + 1:
            # A backlog longer than one tick sweeps: keep ticking until the watermark catches up.
            return False
        # The current and next minutes first: they are where a busy index has items.
        ordered = sorted(minutes, key=lambda minute: minute < current)
        n = self._due.shards
        if not all(self._due.bucket_empty(m, shard) for m in ordered for shard in range(n)):
            return False
        # Then a split minute's other partitions (takt.store.due), its split read only now, so
        # a driver that keeps ticking pays no read for it.
        splits = self._due.splits(ordered)
        return all(
            self._due.bucket_empty(m, shard) for m in ordered for shard in range(n, n * splits[m])
        )


class Waker:
    """Starts a driver when the indexer put an item due before the next minute's driver looks
    and none is awake (module docstring)."""

    def __init__(self, due: DueStore, clock: Clock, start_driver: Callable[[], None]) -> None:
        self._due = due
        self._clock = clock
        self._start_driver = start_driver

    def indexed(self, due: datetime) -> bool:
        """Called after the item due at `due` is put; True when it started a driver.

        A wake that fails (a throttle, a refused invoke) is logged, not raised: the item is in
        the index and the next minute's driver takes it, where failing the stream record would
        hold back the indexing of every job behind it.
        """
        now = self._clock.now()
        if due >= minute_of(now) + timedelta(minutes=1) + NEXT_DRIVER_LATENESS:
            return False
        try:
            if self._due.driver_awake(now, AWAKE_WITHIN_SEC) or not self._due.claim_wake(now):
                return False
            self._start_driver()
        except (ClientError, BotoCoreError):
            logger.warning("no driver started for a job due soon: the next minute's takes it")
            return False
        return True
