"""The simulator's flood (the noisy-neighbour scenario): its cohort is kept apart from the rest,
so the others' start lag and the flood's progress are reported on their own."""

from __future__ import annotations

from takt_cli.capacity.model import Design
from takt_cli.capacity.sim import Load, Simulator

STEADY = Load(steady_per_sec=50, duration_sec=20)
DESIGN = Design(due_shards=8, lane_max_concurrency=5)


def test_a_flood_in_the_same_lane_delays_everyone_due_after_it() -> None:
    alone = Simulator(STEADY, DESIGN, drain_sec=120).run()
    flooded = Simulator(
        Load(steady_per_sec=50, duration_sec=20, flood=2000, flood_at=5), DESIGN, drain_sec=120
    ).run()
    assert flooded.others_start_lag is not None
    assert flooded.others_start_lag["p99"] > alone.start_lag["p99"] + 2
    assert alone.others_start_lag is None


def test_the_floods_progress_is_counted_and_its_end_reported_once_all_started() -> None:
    result = Simulator(
        Load(steady_per_sec=0, duration_sec=10, flood=500, flood_at=2), DESIGN, drain_sec=120
    ).run()
    assert result.flood_started == 500
    assert result.flood_started_within_sec is not None
    assert result.flood_started_within_sec > 0
