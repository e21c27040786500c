"""The drain-sized claim budget and fast-lane headroom (takt.fairness.adaptive), as functions of
the lanes' state."""

from __future__ import annotations

from takt.fairness.adaptive import LaneState, claim_budget, fast_headroom


def lanes(queued: dict[str, int], drain: dict[str, float]) -> LaneState:
    return LaneState(
        {lane: queued.get(lane, 0) for lane in ("high", "default", "low")},
        {lane: drain.get(lane, 0.0) for lane in ("high", "default", "low")},
    )


def test_unmeasured_lanes_claim_the_floor() -> None:
    assert claim_budget(lanes({}, {}), 0.5, 4, 2, None) == 2


def test_lanes_that_keep_up_take_their_drain_and_half_a_second_more_per_partition() -> None:
    state = lanes({}, {"default": 12.0, "low": 4.0})

    assert claim_budget(state, 0.5, 4, 2, None) == 6  # 16 a second x 1.5 / 4 partitions


def test_what_is_queued_comes_off_the_budget_down_to_the_floor() -> None:
    assert claim_budget(lanes({"default": 10}, {"default": 16.0}), 0.5, 1, 2, None) == 14
    assert claim_budget(lanes({"default": 40}, {"default": 16.0}), 0.5, 1, 2, None) == 2


def test_a_claim_is_held_to_half_a_second_at_its_measured_speed() -> None:
    fast = lanes({}, {"default": 1000.0})

    assert claim_budget(fast, 0.5, 1, 2, 0.05) == 10
    assert claim_budget(fast, 0.5, 1, 20, 0.05) == 20  # never below the floor


def test_quiet_tenants_take_the_fast_lanes_headroom_first() -> None:
    state = lanes({"default": 2}, {"default": 10.0, "low": 50.0})

    assert fast_headroom(state, 0.5, "low", 1, 2, quiet=0) == 13  # 10 x 1.5 - 2
    assert fast_headroom(state, 0.5, "low", 1, 2, quiet=5) == 8
    assert fast_headroom(state, 0.5, "low", 1, 2, quiet=20) == 0


def test_empty_fast_lanes_take_at_least_the_floor_so_their_drain_gets_measured() -> None:
    assert fast_headroom(lanes({"low": 100}, {"low": 5.0}), 0.5, "low", 4, 2, quiet=0) == 2
    assert fast_headroom(lanes({"default": 1}, {}), 0.5, "low", 4, 2, quiet=0) == 0
