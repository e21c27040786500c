"""The region lease's policy, pure: no tables, no clock reads.

A region may act (claim, send, advance a job, lease or complete an execution, the watchdog's
writes) only while its own monotonic clock says less than `lease_sec - margin_sec` has passed
since the moment *before* the conditional write that last proved it the holder (`acting_epoch`).
Another region takes the lease over only once the lease's state (holder, epoch, renewals) has
stayed unchanged for `lease_sec + margin_sec` on the watcher's own monotonic clock, counted from
the moment *after* the read that first showed that state. The holder's last proof was taken
before the write that made that state, which was before that read answered, so the holder has
stopped acting `2 * margin_sec` before the take-over, whatever the two clocks read: only their
rates must agree to within the margin, and no two regions' wall clocks are ever compared.

A strongly consistent read proves nothing by itself: the state it returns may have been written
long before, by a holder that has since died, and a watcher may have been timing it for almost
`lease_sec + margin_sec` already. So a process proves the lease with a conditional renewal of its
own (`holder = me AND epoch = E`); a read only tells it which epoch to renew.

A promote (`takt regions promote R`) or a take-over resets `renewals` to 0. A region that finds
itself the holder at 0 renewals was promoted by hand: the old holder may still trust its last
proof, so the new one renews (and acts) only once it has seen that state unchanged for
`lease_sec + margin_sec`; a renewal count above 0 says one of its processes has waited already.
The region that takes over renews at once, so its other processes need not wait.

Another region leaves a lease at 0 renewals alone for twice that wait (`idle_wait_sec`): the
promoted region is waiting out the same `lease_sec + margin_sec`, and a watcher counting to the
same bound would race it (the demoted region, which saw the promote first, taking the lease
straight back: the promote undone). Only a promoted region that never renews, dead or cut off,
is taken over, a full wait after it could have begun.
"""

from __future__ import annotations

from dataclasses import dataclass

from takt.models.regions import RegionLease


@dataclass(frozen=True)
class LeaseTimes:
    """The lease's lengths, in seconds: the settings `region_lease_sec`, `region_renew_sec` and
    `region_margin_sec`."""

    lease_sec: float
    renew_sec: float
    margin_sec: float

    @property
    def trust_sec(self) -> float:
        """How long after its proof a holder may act."""
        return self.lease_sec - self.margin_sec

    @property
    def wait_sec(self) -> float:
        """How long a state must stay unchanged before another region takes the lease over, or
        before a promoted region acts."""
        return self.lease_sec + self.margin_sec

    @property
    def idle_wait_sec(self) -> float:
        """How long a lease at 0 renewals (a promote, a first lease) must stay unchanged before
        another region takes it over: the promoted region's own wait, then as long again."""
        return 2 * self.wait_sec


@dataclass(frozen=True)
class Proof:
    """This region held the lease at `epoch` at monotonic instant `at`, taken just before the
    conditional write that showed it."""

    epoch: int
    at: float


@dataclass(frozen=True)
class Sighting:
    """The lease as last read, and the monotonic instant after the read that first returned
    this state: how long it has stayed unchanged is counted from there."""

    lease: RegionLease
    since: float


@dataclass(frozen=True)
class Renew:
    """Renew the lease at `epoch` (conditional on holder and epoch): the only proof."""

    epoch: int


@dataclass(frozen=True)
class Create:
    """Write the first lease, this region its holder at epoch 1 (conditional on none)."""


@dataclass(frozen=True)
class TakeOver:
    """Take the lease from its silent holder (conditional on the state `seen`)."""

    seen: RegionLease


@dataclass(frozen=True)
class Wait:
    """Do nothing now; `why` is logged."""

    why: str


Move = Renew | Create | TakeOver | Wait


def acting_epoch(proof: Proof | None, now: float, times: LeaseTimes) -> int | None:
    """The epoch this region may act with at monotonic `now`, or None."""
    if proof is not None and now - proof.at < times.trust_sec:
        return proof.epoch
    return None


def seen(previous: Sighting | None, lease: RegionLease | None, after: float) -> Sighting | None:
    """The sighting after a read that returned `lease` and ended at monotonic `after`: the
    previous one while the state is unchanged, so the wait goes on counting."""
    if lease is None:
        return None
    if previous is not None and previous.lease.state == lease.state:
        return previous
    return Sighting(lease, after)


def decide(
    sighting: Sighting | None,
    now: float,
    *,
    me: str,
    initial: str,
    times: LeaseTimes,
    may_take_over: bool,
) -> Move:
    """What this region does after reading the lease (`sighting`) at monotonic `now`. Only a
    driver (`may_take_over`) takes a lease over: the region that takes over must re-plan from
    the due index, which its drivers do."""
    if sighting is None:
        if me == initial:
            return Create()
        return Wait(f"no region lease yet: {initial} writes the first")
    lease = sighting.lease
    waited = now - sighting.since
    if lease.holder == me:
        if lease.renewals > 0 or waited >= times.wait_sec:
            return Renew(lease.epoch)
        return Wait(f"promoted at epoch {lease.epoch}: the old holder's proof may still hold")
    patience = times.idle_wait_sec if lease.renewals == 0 else times.wait_sec
    if may_take_over and waited >= patience:
        return TakeOver(lease)
    return Wait(f"{lease.holder} holds the region lease at epoch {lease.epoch}")
