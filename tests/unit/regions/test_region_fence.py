"""The region fence (`takt.regions.fence`) on the in-memory lease, each process on a monotonic
clock of its own driven by hand: when it acts, what it costs, and that two regions never act at
the same instant whatever the interleaving of their steps, pauses and partitions."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from takt.models.regions import Fenced, RegionLease
from takt.regions.fence import RegionFence
from takt.regions.lease import LeaseTimes
from tests.support.fakes import FakeRegionLeases

TIMES = LeaseTimes(lease_sec=20.0, renew_sec=5.0, margin_sec=5.0)
EAST = "us-east-1"
WEST = "us-west-2"


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

    leases: FakeRegionLeases
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


def _fence(me: str, store: Reachable, ticks: Ticks) -> RegionFence:
    return RegionFence(store, me=me, initial=EAST, times=TIMES, monotonic=ticks)


def test_the_first_region_writes_the_lease_and_acts_at_epoch_1() -> None:
    leases = FakeRegionLeases()
    fence = _fence(EAST, Reachable(leases), Ticks())

    assert (fence.epoch(), leases.lease) == (1, RegionLease(EAST, 1, 0, 20_000)), (
        "the initial holder creates the lease (conditional on none) and acts with epoch 1"
    )


def test_a_process_proves_the_lease_at_most_once_per_renew_period() -> None:
    store = Reachable(FakeRegionLeases())
    ticks = Ticks()
    fence = _fence(EAST, store, ticks)
    for hundredth in range(1001):
        ticks.real = hundredth / 100
        fence.epoch()

    assert store.calls == ["read", "create", "renew", "renew"], (
        "the fence's proof is cached: 10 s of claims cost one read and one write per renew period"
    )


def test_a_region_whose_proof_is_older_than_lease_minus_margin_refuses_to_act() -> None:
    store = Reachable(FakeRegionLeases())
    ticks = Ticks()
    fence = _fence(EAST, store, ticks)
    fence.epoch()
    store.down = True
    ticks.real = 14.999
    acting = fence.epoch()
    ticks.real = 15.0

    with pytest.raises(Fenced):
        fence.epoch()
    assert acting == 1, "an unreachable lease leaves the last proof standing until it is too old"


def test_a_standby_takes_over_only_after_lease_plus_margin_unchanged() -> None:
    leases = FakeRegionLeases()
    east_ticks, west_ticks = Ticks(), Ticks()
    east = _fence(EAST, Reachable(leases), east_ticks)
    west = _fence(WEST, Reachable(leases), west_ticks)
    east.step()
    steps = []
    for second in range(1, 27):
        west_ticks.real = float(second)
        steps.append(west.step())

    assert (steps.index(True), leases.lease) == (25, RegionLease(WEST, 2, 1, 20_000)), (
        "a standby's driver, reading every renew period from 1 s, takes over (and renews at "
        "once) at 26 s: lease + margin after it first saw the silent holder's lease"
    )
    east_ticks.real = 26.0
    with pytest.raises(Fenced):
        east.epoch()


def test_a_standby_process_that_is_not_a_driver_never_takes_over() -> None:
    leases = FakeRegionLeases()
    _fence(EAST, Reachable(leases), Ticks()).step()
    ticks = Ticks()
    west = _fence(WEST, Reachable(leases), ticks)
    for second in range(100):
        ticks.real = float(second)
        with pytest.raises(Fenced):
            west.epoch()

    assert leases.lease == RegionLease(EAST, 1, 0, 20_000), (
        "only a driver (step) takes the lease over: a claimer or worker process only waits"
    )


def test_a_promoted_region_waits_lease_plus_margin_and_the_old_holder_stops() -> None:
    leases = FakeRegionLeases()
    ticks = Ticks()
    east = _fence(EAST, Reachable(leases), ticks)
    west = _fence(WEST, Reachable(leases), ticks)
    east.step()
    ticks.real = 1.0
    leases.promote(WEST)
    steps = []
    for second in range(1, 27):
        ticks.real = float(second)
        steps.append((east.step(), west.step()))

    assert (steps[4], steps.index((False, True)), west.epoch()) == ((False, False), 25, 2), (
        "the old holder's next renewal fails and it stops; the promoted region acts only "
        "lease + margin after it first saw itself promoted"
    )


def test_an_old_holder_whose_renewal_fails_stops_at_once() -> None:
    leases = FakeRegionLeases()
    ticks = Ticks()
    east = _fence(EAST, Reachable(leases), ticks)
    east.epoch()
    leases.promote(WEST)
    ticks.real = 5.0

    with pytest.raises(Fenced):
        east.epoch()
    assert east.holding() is None, "a lost renewal drops the proof, young as it is"


# The property: any interleaving of two regions' drivers and other processes, promotes,
# partitions and pauses (a process not called while real time passes), with clock rates apart
# by up to 10 %, never has both regions able to act at the same real instant.
_ACTIONS = st.one_of(
    st.tuples(st.just("wait"), st.floats(min_value=0.0, max_value=12.0)),
    st.tuples(st.sampled_from(["step", "epoch", "promote", "cut"]), st.sampled_from([0, 1])),
)


@settings(max_examples=150, deadline=None)
@given(
    rates=st.tuples(st.floats(0.9, 1.1), st.floats(0.9, 1.1)),
    actions=st.lists(_ACTIONS, min_size=1, max_size=60),
)
def test_two_regions_never_both_act_at_one_instant(
    rates: tuple[float, float], actions: list[tuple[str, float]]
) -> None:
    leases = FakeRegionLeases()
    ticks = [Ticks(rate=rates[0]), Ticks(rate=rates[1])]
    stores = [Reachable(leases), Reachable(leases)]
    fences = [_fence(EAST, stores[0], ticks[0]), _fence(WEST, stores[1], ticks[1])]
    for action, value in actions:
        who = int(value)
        if action == "wait":
            for tick in ticks:
                tick.real += value
        elif action == "step":
            fences[who].step()
        elif action == "epoch":
            with contextlib.suppress(Fenced):
                fences[who].epoch()
        elif action == "promote" and leases.lease is not None:
            leases.promote((EAST, WEST)[who])
        elif action == "cut":
            stores[who].down = not stores[who].down
        acting = [fence.holding() for fence in fences]
        assert None in acting, f"two regions may act at once ({acting}): the fence failed"
