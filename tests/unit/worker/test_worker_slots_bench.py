"""bench/worker_slots.py's arithmetic: how soon a freed slot takes the next run, and each run's
lag beyond the turn the slots give it. The slot count a profile ships is chosen from these
figures (docs/WORKERS.md), so they must mean what they say."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench.worker_slots import timings

READY = datetime(2026, 12, 5, 19, 0, tzinfo=UTC)


def _at(*seconds: float) -> list[datetime]:
    return [READY + timedelta(seconds=s) for s in seconds]


def test_a_slot_turnover_gap_pairs_the_kth_start_after_the_first_wave_with_the_kth_completion() -> (
    None
):
    # Two slots, 10 s calls: runs start at 0.1 and 0.2, end at 10.1 and 10.2; the next two
    # start 0.3 s after each end, the last two 0.5 s after those end.
    starts = _at(0.1, 0.2, 10.4, 10.5, 20.9, 21.0)
    ends = _at(10.1, 10.2, 20.4, 20.5, 30.9, 31.0)

    out = timings(list(reversed(starts)), ends, 2, 10.0, READY)

    assert out["turnover_gap_sec"] == {"p50": 0.5, "p90": 0.5, "p99": 0.5, "max": 0.5}, (
        "a slot's gap is its completion to its next start, start N + k against completion k"
    )
    assert out["first_wave_filled_sec"] == 0.2, "the first wave is the N-th start"


def test_a_runs_lag_beyond_its_turn_leaves_out_the_calls_its_slot_ran_before_it() -> None:
    # The third and fourth runs could start no sooner than one call (10 s) after the worker
    # was ready: only what they waited beyond that is the worker's.
    starts = _at(0.0, 1.0, 10.5, 12.0)
    ends = _at(10.0, 11.0, 20.5, 22.0)

    out = timings(starts, ends, 2, 10.0, READY)

    assert out["start_lag_beyond_its_turn_sec"]["max"] == 2.0, (
        "a run's lag beyond its turn is its start less floor(k / N) calls"
    )
    assert out["executions_per_sec_with_no_overhead"] == 0.2


def test_the_most_runs_at_once_tells_whether_every_slot_was_busy() -> None:
    # Two slots; the second run starts after the first ended: never both busy.
    one_at_a_time = timings(_at(0.0, 10.5), _at(10.0, 20.5), 2, 10.0, READY)
    both = timings(_at(0.0, 1.0), _at(10.0, 11.0), 2, 10.0, READY)

    assert (one_at_a_time["peak_runs_at_once"], both["peak_runs_at_once"]) == (1, 2), (
        "the most runs at once counts runs between their start and their finish"
    )
