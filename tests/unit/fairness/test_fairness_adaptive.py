"""The drain-sized claim budget and fast-lane headroom (takt.fairness.adaptive), as functions of
the lanes' state."""

from __future__ import annotations

from takt.fairness.adaptive import LaneState, claim_budget, fast_headroom


def lanes(queued: dict[str, int], drain: dict[str, float]) -> LaneState:
    return LaneState(
        {lane: queued.get(lane, 0) for lane in ("high", "default", "low")},
        {lane: drain.get(lane, 0.0) for lane in ("high", "default", "low")},
    )


def test_empty_lanes_double_the_last_claim_from_the_floor() -> None:
    assert claim_budget(lanes({}, {}), 0.5, 4, 2, 1) == 2
    assert claim_budget(lanes({}, {}), 0.5, 4, 2, 5) == 10


def test_lanes_that_keep_up_take_their_drain_and_half_a_second_more_per_partition() -> None:
    state = lanes({"low": 1}, {"default": 12.0, "low": 4.0})

    assert claim_budget(state, 0.5, 4, 2, 2) == 6  # (18 + 5) / 4, rounded up


def test_what_is_queued_comes_off_the_budget_down_to_the_floor() -> None:
    assert claim_budget(lanes({"default": 10}, {"default": 16.0}), 0.5, 1, 2, 2) == 14
    assert claim_budget(lanes({"default": 40}, {"default": 16.0}), 0.5, 1, 2, 30) == 2


def test_quiet_tenants_take_the_fast_lanes_headroom_first() -> None:
    state = lanes({"default": 2}, {"default": 10.0, "low": 50.0})

    assert fast_headroom(state, 0.5, "low", 1, 2, quiet=0) == 13  # 10 x 1.5 - 2
    assert fast_headroom(state, 0.5, "low", 1, 2, quiet=5) == 8
    assert fast_headroom(state, 0.5, "low", 1, 2, quiet=20) == 0


def test_empty_fast_lanes_take_at_least_the_floor_so_their_drain_gets_measured() -> None:
    assert fast_headroom(lanes({"low": 100}, {"low": 5.0}), 0.5, "low", 4, 2, quiet=0) == 2
    assert fast_headroom(lanes({"default": 1}, {}), 0.5, "low", 4, 2, quiet=0) == 0
