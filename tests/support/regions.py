"""The region lease for tests: a table on moto, a process's clock and its reach to the lease,
and the interleavings of two regions' processes that the fence's property is checked over."""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field

from botocore.exceptions import ClientError
from hypothesis import strategies as st

from takt.aws import AwsClients
from takt.models.regions import Fenced, RegionLease
from takt.regions.fence import RegionFence
from takt.regions.lease import LeaseTimes
from takt.resources import REGIONS
from takt.store.ports import RegionLeases
from takt.store.region_lease import RegionLeaseStore

EAST = "us-east-1"
WEST = "us-west-2"
TIMES = LeaseTimes(lease_sec=20.0, renew_sec=5.0, margin_sec=5.0)


def fresh_lease_table(clients: AwsClients) -> str:
    """A new, empty `regions` table (from `takt.resources.REGIONS`), by name."""
    name = f"regions-{uuid.uuid4().hex[:8]}"
    clients.dynamodb.create_table(**REGIONS.create_table_kwargs(name))
    return name


def lease_store(clients: AwsClients, table: str, lease_ms: int = 20_000) -> RegionLeaseStore:
    return RegionLeaseStore(clients.dynamodb, table, lease_ms)


@dataclass
class Ticks:
    """A process's monotonic clock: `rate` seconds of its own per second of real time."""

    real: float = 0.0
    rate: float = 1.0

    def __call__(self) -> float:
        return self.real * self.rate


@dataclass
class Reachable:
    """The shared lease as one process reaches it: `down` is a partition (every call fails)."""

    leases: RegionLeases
    down: bool = False
    calls: list[str] = field(default_factory=list)

    def _check(self, call: str) -> None:
        self.calls.append(call)
        if self.down:
            raise ClientError({"Error": {"Code": "RequestTimeout"}}, call)

    def read(self) -> RegionLease | None:
        self._check("read")
        return self.leases.read()

    def create(self, holder: str) -> RegionLease | None:
        self._check("create")
        return self.leases.create(holder)

    def renew(self, holder: str, epoch: int) -> RegionLease | None:
        self._check("renew")
        return self.leases.renew(holder, epoch)

    def take_over(self, seen: RegionLease, holder: str) -> RegionLease | None:
        self._check("take_over")
        return self.leases.take_over(seen, holder)

    def promote(self, holder: str) -> RegionLease:
        return self.leases.promote(holder)


def region_fence(me: str, store: RegionLeases, ticks: Ticks) -> RegionFence:
    """The fence of `me` in a deployment of EAST (the initial holder) and WEST."""
    return RegionFence(store, me=me, initial=EAST, times=TIMES, monotonic=ticks)


# Two regions interleaved: each region's driver steps once a second while it runs; `run` lets
# that much real time pass (every process's clock moves on, at its own rate); `pause` stops or
# resumes one region's processes (a paused process is not called while time passes); `epoch` is
# another process of one region asking to act; `promote` moves the lease by hand; `cut` cuts one
# region from the lease table or heals the partition.
RATES = st.tuples(st.floats(0.9, 1.1), st.floats(0.9, 1.1))
ACTIONS = st.one_of(
    st.tuples(st.just("run"), st.floats(min_value=0.0, max_value=40.0)),
    st.tuples(st.sampled_from(["pause", "epoch", "promote", "cut"]), st.sampled_from([0, 1])),
)


@dataclass
class _Regions:
    """The two regions' fences, clocks, reach and pauses, and the first instant both acted."""

    leases: RegionLeases
    rates: tuple[float, float]
    ticks: list[Ticks] = field(default_factory=list)
    stores: list[Reachable] = field(default_factory=list)
    fences: list[RegionFence] = field(default_factory=list)
    paused: list[bool] = field(default_factory=lambda: [False, False])
    both: list[int | None] | None = None

    def __post_init__(self) -> None:
        self.ticks = [Ticks(rate=rate) for rate in self.rates]
        self.stores = [Reachable(self.leases), Reachable(self.leases)]
        self.fences = [
            region_fence(me, store, tick)
            for me, store, tick in zip((EAST, WEST), self.stores, self.ticks, strict=True)
        ]

    def check(self) -> None:
        acting = [fence.holding() for fence in self.fences]
        if self.both is None and None not in acting:
            self.both = acting

    def run(self, seconds: float) -> None:
        """Each running region's driver steps now and after every whole second of `seconds`."""
        left = seconds
        while True:
            for who, fence in enumerate(self.fences):
                if not self.paused[who]:
                    fence.step()
                    self.check()
            step = min(1.0, left)
            if step <= 0:
                return
            for tick in self.ticks:
                tick.real += step
            self.check()
            left -= step

    def act(self, action: str, value: float) -> None:
        who = int(value)
        if action == "run":
            self.run(value)
        elif action == "pause":
            self.paused[who] = not self.paused[who]
        elif action == "epoch" and not self.paused[who]:
            with contextlib.suppress(Fenced):
                self.fences[who].epoch()
        elif action == "promote" and self.leases.read() is not None:
            self.leases.promote((EAST, WEST)[who])
        elif action == "cut":
            self.stores[who].down = not self.stores[who].down
        self.check()


def both_acting(
    leases: RegionLeases, rates: tuple[float, float], actions: list[tuple[str, float]]
) -> list[int | None] | None:
    """Run the interleaving on `leases`; the two regions' epochs at the first instant both
    could act, or None when that never happened."""
    regions = _Regions(leases, rates)
    for action, value in actions:
        regions.act(action, value)
        if regions.both is not None:
            break
    return regions.both
