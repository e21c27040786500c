"""The region fence (`takt.regions.fence`) on the in-memory lease, each process on a monotonic
clock of its own driven by hand: when it acts, what it costs, and that two regions never act at
the same instant whatever the interleaving of their steps, pauses and partitions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from takt.models.regions import Fenced, RegionLease
from takt.regions.fence import RegionFence
from tests.support.fakes import FakeRegionLeases
from tests.support.regions import (
    ACTIONS,
    EAST,
    RATES,
    WEST,
    Reachable,
    Ticks,
    both_acting,
    region_fence,
)


def _fence(me: str, store: Reachable, ticks: Ticks) -> RegionFence:
    return region_fence(me, store, ticks)


def _east_renewed_once() -> tuple[
    FakeRegionLeases, tuple[RegionFence, Ticks], tuple[RegionFence, Ticks]
]:
    """The lease written by east and renewed once (so not at 0 renewals), and each region's
    fence on a clock of its own."""
    leases = FakeRegionLeases()
    east_ticks, west_ticks = Ticks(), Ticks()
    east = _fence(EAST, Reachable(leases), east_ticks)
    west = _fence(WEST, Reachable(leases), west_ticks)
    east.step()
    east_ticks.real = 5.0
    east.step()
    return leases, (east, east_ticks), (west, west_ticks)


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
    leases, (east, east_ticks), (west, west_ticks) = _east_renewed_once()
    steps = []
    for second in range(1, 27):
        west_ticks.real = float(second)
        steps.append(west.step())

    assert (steps.index(True), leases.lease) == (25, RegionLease(WEST, 2, 1, 20_000)), (
        "a standby's driver, reading every renew period from 1 s, takes over (and renews at "
        "once) at 26 s: lease + margin after it first saw the silent holder's renewed lease"
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


def test_a_promote_is_not_taken_back_by_the_demoted_region_that_saw_it_first() -> None:
    leases, (east, east_ticks), (west, west_ticks) = _east_renewed_once()
    leases.promote(WEST)
    # The demoted east reads the promote at 10 s; west's driver, its seconds offset, at 10.5 s.
    steps = []
    for second in range(10, 60, 5):
        east_ticks.real, west_ticks.real = float(second), second + 0.5
        steps.append((east.step(), west.step()))

    west_acts = next((i for i, step in enumerate(steps) if step == (False, True)), None)
    lease = leases.lease
    assert lease is not None
    assert (west_acts, lease.holder, lease.epoch) == (5, WEST, 2), (
        "a lease at 0 renewals (a promote) is left to the promoted region for twice lease + "
        "margin: the demoted region, which saw the promote half a second first, does not take it "
        "back at lease + margin, just before the promoted region's own wait ends"
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
# partitions and pauses, with clock rates apart by up to 10 %, never has both regions able to
# act at the same real instant. (tests/integration/test_regions_fence.py runs it on moto.)
@settings(max_examples=150, deadline=None)
@given(rates=RATES, actions=st.lists(ACTIONS, min_size=1, max_size=30))
def test_two_regions_never_both_act_at_one_instant(
    rates: tuple[float, float], actions: list[tuple[str, float]]
) -> None:
    acting = both_acting(FakeRegionLeases(), rates, actions)

    assert acting is None, f"two regions may act at once ({acting}): the fence failed"
