"""The region fence: the lease store, the policy (`takt.regions.lease`) and this process's
monotonic clock, asked by every acting path before it writes.

One fence per process, shared by the driver, the claimer, the worker and the watchdog that run
in it (`takt.wiring.regions`). Its proof is cached: a process re-proves the lease (one
conditional renewal, after a read when it knows no epoch yet) at most once per `renew_sec`,
however many claims, leases or completions it makes, and a fenced process reads the lease at
most that often too. A store error changes nothing: the last proof still counts until it is
too old, and the next try waits for the next period.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from botocore.exceptions import BotoCoreError, ClientError

from takt.models.regions import Fenced
from takt.observability import logger
from takt.regions.lease import (
    Create,
    LeaseTimes,
    Move,
    Proof,
    Renew,
    Sighting,
    TakeOver,
    Wait,
    acting_epoch,
    decide,
    seen,
)
from takt.store.ports import RegionLeases


class RegionFence:
    """The fence of region `me` in a deployment whose initial holder is `initial`."""

    def __init__(
        self,
        leases: RegionLeases,
        *,
        me: str,
        initial: str,
        times: LeaseTimes,
        monotonic: Callable[[], float],
    ) -> None:
        self._leases = leases
        self._me = me
        self._initial = initial
        self._times = times
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._proof: Proof | None = None
        self._sighting: Sighting | None = None
        self._tried: float | None = None

    def holding(self) -> int | None:
        """The epoch this process may act with now, from its cached proof, touching no table."""
        with self._lock:
            return acting_epoch(self._proof, self._monotonic(), self._times)

    def epoch(self) -> int:
        """The epoch this region acts with; Fenced when it may not act."""
        acting = self._refresh(may_take_over=False)
        if acting is None:
            raise Fenced(f"region {self._me} does not hold the region lease now")
        return acting

    def step(self) -> bool:
        """A driver's second: renew, or watch the holder and take over once it fell silent.
        Whether this region may act now (the driver sweeps only then)."""
        return self._refresh(may_take_over=True) is not None

    def _refresh(self, *, may_take_over: bool) -> int | None:
        with self._lock:
            now = self._monotonic()
            if self._tried is None or now - self._tried >= self._times.renew_sec:
                self._tried = now
                try:
                    self._prove(may_take_over=may_take_over)
                except (ClientError, BotoCoreError):
                    logger.warning("region lease not reached: the last proof stands", exc_info=True)
            return acting_epoch(self._proof, self._monotonic(), self._times)

    def _prove(self, *, may_take_over: bool) -> None:
        if self._proof is not None and self._renew(self._proof.epoch):
            return
        # Lost (or never had) the lease: stop trusting the old proof at once.
        self._proof = None
        lease = self._leases.read()
        after = self._monotonic()
        self._sighting = seen(self._sighting, lease, after)
        move = decide(
            self._sighting,
            after,
            me=self._me,
            initial=self._initial,
            times=self._times,
            may_take_over=may_take_over,
        )
        self._apply(move)

    def _apply(self, move: Move) -> None:
        match move:
            case Renew(epoch):
                self._renew(epoch)
            case Create():
                before = self._monotonic()
                created = self._leases.create(self._me)
                if created is not None:
                    self._proof = Proof(created.epoch, before)
            case TakeOver(lease):
                before = self._monotonic()
                taken = self._leases.take_over(lease, self._me)
                if taken is not None:
                    self._proof = Proof(taken.epoch, before)
                    logger.warning("region lease taken over", was=lease.holder, epoch=taken.epoch)
                    # Renewed at once, so this region's other processes find the epoch live
                    # (renewals above 0) and need not wait as after a promote.
                    self._renew(taken.epoch)
            case Wait(why):
                logger.debug("region fenced", why=why)

    def _renew(self, epoch: int) -> bool:
        before = self._monotonic()
        renewed = self._leases.renew(self._me, epoch)
        if renewed is None:
            return False
        self._proof = Proof(epoch, before)
        self._sighting = seen(self._sighting, renewed, self._monotonic())
        return True
