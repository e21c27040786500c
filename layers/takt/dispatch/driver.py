"""A per-second driver: the loop that makes the ticker tick once every whole second.

Several drivers run at once (docs/ARCHITECTURE.md, "The per-second drivers"). Each second is
claimed with one conditional write (`DueStore.claim_second`) and only its winner sweeps the due
index, so the drivers share one sweep a second between them, and while any of them lives no
second goes unswept. No driver is elected or holds a lease: the one that won the last second
claims the next on the second (it leads), and the others look `FOLLOW_AFTER_SEC` later, with a
read, whether that second was claimed, and claim it themselves only when it was not. So one
driver sweeps second after second (its ticker's memory of backlogged partitions stays in one
place, and a lost claim's write unit is not spent every second), and when it dies, at any
instant, the next second's follower takes over: what was due is at most about
`1 + FOLLOW_AFTER_SEC` seconds late. A driver's claim that fails for any other reason than losing
(a throttle, a timeout) is taken as won: sweeping a second twice costs a few reads, skipping it
would delay what is due.

A tick that raises is logged and the loop goes on with the next second, because the other drivers
cannot take over a second this one won; only `MAX_FAILED_TICKS` failures in a row end the loop
with the error, so an error that every tick meets (a permission, a missing table) fails the
invocation and pages rather than being logged forever.

In a multi-region deployment each second starts with the region fence's step
(`takt.regions.fence`): the holder's drivers renew the region lease, a standby's watch it and
take it over once its holder fell silent, and only a region that may act claims the second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from takt.clock import Clock
from takt.dispatch.ticker import Ticker, TickResult
from takt.models.regions import Fence, Unfenced
from takt.observability import logger
from takt.store.due import DueStore, SecondClaim
from takt.store.errors import StoreUnavailableError

MAX_FAILED_TICKS = 5
# How long after the whole second a driver that did not win the last one looks at the next: enough
# for the leader's claim (a few milliseconds) to be visible, short against the 3 s budget.
FOLLOW_AFTER_SEC = 0.3
# A driver invocation stops this long before its timeout, so ending on time is not an error (which
# would page); the deployment sets the timeout to the life it wants plus this (infra/driver.py).
STOP_BEFORE_END_SEC = 3


@dataclass
class DriveResult:
    """What one driver's loop did: the seconds it tried to claim, and those it won and swept."""

    seconds: int = 0
    ticks: int = 0
    dispatched: int = 0


class Driver:
    """One driver: its loop, and the step it takes each second. `leading` is whether it won the
    last second it looked at, which decides when it looks at the next and whether it reads first.
    """

    def __init__(
        self, due: DueStore, ticker: Ticker, clock: Clock, fence: Fence | None = None
    ) -> None:
        self._due = due
        self._ticker = ticker
        self._clock = clock
        self._fence = fence or Unfenced()
        self.leading = False

    def step(self, now: datetime) -> TickResult | None:
        """Claim the second of `now` and sweep it if this driver won it; None if another did."""
        if not self._fence.step():
            self.leading = False
            return None
        claim: SecondClaim | None
        try:
            if not self.leading and self._due.second_claimed(now):
                return None
            claim = self._due.claim_second(now)
        except StoreUnavailableError:
            logger.warning("second not claimed: sweeping it anyway", exc_info=True)
            claim = None
        self.leading = claim is None or claim.won
        if not self.leading:
            return None
        return self._ticker.tick(now, claim)

    def run(
        self,
        *,
        keep_going: Callable[[], bool],
        wait: Callable[[float], object],
        ticks: int | None = None,
        on_tick: Callable[[TickResult], None] = lambda _: None,
    ) -> DriveResult:
        """Step now, then on every whole second while `keep_going()` (and for at most `ticks`
        seconds when given), sleeping with `wait(seconds)` in between."""
        result = DriveResult()
        failures = 0
        while ticks is None or result.seconds < ticks:
            result.seconds += 1
            now = self._clock.now()
            try:
                tick = self.step(now)
                failures = 0
            except Exception:  # one failed tick must not end the loop: see the module docstring
                self.leading = False
                failures += 1
                logger.exception("tick failed", failures=failures)
                if failures >= MAX_FAILED_TICKS:
                    raise
                tick = None
            if tick is not None:
                result.ticks += 1
                result.dispatched += tick.total.dispatched
                on_tick(tick)
            if (ticks is not None and result.seconds >= ticks) or not keep_going():
                break
            # To the start of the next second (the leader), so ticks stay aligned with due times,
            # or a little after it (the others); at once if this step ran past that already, so a
            # long sweep delays the next second's rather than skipping it.
            following = now.replace(microsecond=0) + timedelta(seconds=1)
            if not self.leading:
                following += timedelta(seconds=FOLLOW_AFTER_SEC)
            wait(max(0.0, (following - self._clock.now()).total_seconds()))
        return result
