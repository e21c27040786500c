"""The region lease's policy (`takt.regions.lease`) in tables, on monotonic instants given by
hand: when a proof lets a region act, when a standby takes over, when a promoted region acts."""

from __future__ import annotations

import pytest

from takt.models.regions import RegionLease
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

TIMES = LeaseTimes(lease_sec=20.0, renew_sec=5.0, margin_sec=5.0)
EAST = "us-east-1"
WEST = "us-west-2"


def _lease(holder: str, epoch: int = 3, renewals: int = 7) -> RegionLease:
    return RegionLease(holder, epoch, renewals, 20_000)


@pytest.mark.parametrize(
    ("proof", "now", "expected"),
    [
        (None, 0.0, None),
        (Proof(3, 100.0), 100.0, 3),
        (Proof(3, 100.0), 114.999, 3),
        # lease - margin after the proof, exactly: no longer.
        (Proof(3, 100.0), 115.0, None),
        (Proof(3, 100.0), 130.0, None),
    ],
)
def test_a_region_acts_only_while_its_proof_is_younger_than_lease_minus_margin(
    proof: Proof | None, now: float, expected: int | None
) -> None:
    assert acting_epoch(proof, now, TIMES) == expected, (
        "a region may act only while less than lease_sec - margin_sec has passed since its proof"
    )


@pytest.mark.parametrize(
    ("sighting", "now", "me", "may_take_over", "expected"),
    [
        (None, 0.0, EAST, False, Create()),
        (None, 0.0, WEST, True, Wait("no region lease yet: us-east-1 writes the first")),
        (Sighting(_lease(EAST), 0.0), 0.0, EAST, False, Renew(3)),
        # Promoted by hand (renewals 0): the old holder's proof may hold for lease - margin.
        (
            Sighting(_lease(EAST, renewals=0), 0.0),
            24.999,
            EAST,
            True,
            Wait("promoted at epoch 3: the old holder's proof may still hold"),
        ),
        (Sighting(_lease(EAST, renewals=0), 0.0), 25.0, EAST, False, Renew(3)),
        # A standby takes over only once the state stayed unchanged for lease + margin.
        (
            Sighting(_lease(EAST), 10.0),
            34.999,
            WEST,
            True,
            Wait("us-east-1 holds the region lease at epoch 3"),
        ),
        (Sighting(_lease(EAST), 10.0), 35.0, WEST, True, TakeOver(_lease(EAST))),
        # A lease at 0 renewals (promoted, or just created) is the holder's for twice as long.
        (
            Sighting(_lease(EAST, renewals=0), 10.0),
            59.999,
            WEST,
            True,
            Wait("us-east-1 holds the region lease at epoch 3"),
        ),
        (
            Sighting(_lease(EAST, renewals=0), 10.0),
            60.0,
            WEST,
            True,
            TakeOver(_lease(EAST, renewals=0)),
        ),
        # Only a driver takes over, however long the holder has been silent.
        (
            Sighting(_lease(EAST), 10.0),
            1000.0,
            WEST,
            False,
            Wait("us-east-1 holds the region lease at epoch 3"),
        ),
    ],
)
def test_the_lease_policy_renews_waits_or_takes_over_by_the_lease_and_the_margin(
    sighting: Sighting | None, now: float, me: str, may_take_over: bool, expected: Move
) -> None:
    move = decide(sighting, now, me=me, initial=EAST, times=TIMES, may_take_over=may_take_over)

    assert move == expected, (
        "a standby takes over, and a promoted region acts, only after lease + margin unchanged"
    )


def test_a_watch_counts_from_the_first_read_of_an_unchanged_state() -> None:
    first = seen(None, _lease(EAST), 1.0)
    again = seen(first, _lease(EAST), 6.0)
    renewed = seen(again, _lease(EAST, renewals=8), 11.0)

    assert (again, renewed, seen(renewed, None, 12.0)) == (
        Sighting(_lease(EAST), 1.0),
        Sighting(_lease(EAST, renewals=8), 11.0),
        None,
    ), "an unchanged lease keeps the instant it was first seen; a renewal restarts the wait"
