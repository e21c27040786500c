"""The hot minute split's count writes in the cost model (takt.store.due, docs/CAPACITY.md "The
hot minute split"): a due write at split 1 pays the measured rate, a minute's sample thins as it
splits, and the simulator prices each scenario's hour with its own minutes' counts."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from takt.store.due import SAMPLE
from takt_cli.capacity.model import (
    COUNT_DUE_WRITES,
    CallProfile,
    Design,
    hour_count_share,
    minute_count_writes,
    with_minute_counts,
)
from takt_cli.capacity.prices import US_EAST_1
from takt_cli.capacity.profiles import load_profile
from takt_cli.capacity.scenarios import SEED, duration_lines


def test_the_measured_count_rate_is_the_designs_one_write_in_sixteen_within_its_sample() -> None:
    rate = CallProfile().count_write_units_per_due_write
    # The run's count writes are a binomial sample of its due writes, one in SAMPLE each.
    sd = math.sqrt(COUNT_DUE_WRITES * (1 / SAMPLE) * (1 - 1 / SAMPLE)) / COUNT_DUE_WRITES
    assert abs(rate - 1 / SAMPLE) <= 3 * sd, (
        "the hot minute split: the measured count writes a due write makes are the sampled "
        "count's one in 16, within the measuring run's sampling error"
    )


def test_a_minutes_count_writes_thin_as_it_splits_as_the_shipped_hashing_counts_them() -> None:
    seed = Design(due_shards=64)
    tenx = Design(due_shards=128)

    # bench/due_split.py over the shipped hashing and sampling (docs/CAPACITY.md's table):
    # 6,250 count writes for 100,000 items, 19,804 for a million, 40,001 for ten million.
    assert minute_count_writes(100_000, seed) / SAMPLE == pytest.approx(6_250)
    assert minute_count_writes(1_000_000, seed) / SAMPLE == pytest.approx(19_804, rel=0.001), (
        "the hot minute split: a writer at split k samples one item in 16k, so a million items "
        "cost about 20,000 count writes, not 62,500"
    )
    assert minute_count_writes(10_000_000, tenx) / SAMPLE == pytest.approx(40_001, rel=0.001), (
        "the hot minute split: once the split is at its cap the writers stop counting"
    )


def test_the_steady_hour_pays_the_whole_rate_and_the_top_of_the_hour_a_thinner_one() -> None:
    seed = Design(due_shards=64)

    assert hour_count_share(seed, 5_000_000, 0) == pytest.approx(1.0), (
        "the hot minute split: 83,333 items a minute never split, so each due write pays the "
        "measured rate"
    )
    # The first minute's 1,066,667 items write 320,000 due writes' worth, the other 59
    # minutes' 66,667 each their own: (320,000 + 59 x 66,667) / 5,000,000.
    assert hour_count_share(seed, 5_000_000, 1_000_000) == pytest.approx(0.8507, abs=1e-4)


def test_each_scenario_prices_its_hours_count_writes_as_a_line_of_its_own() -> None:
    steady, top, _ = SEED
    design = load_profile(None).design()
    calls = CallProfile()
    write = US_EAST_1.dynamodb_write_unit_per_million

    priced = {
        scenario.name: with_minute_counts(
            calls, design, scenario.executions_per_hour, scenario.load.burst
        )
        for scenario in (steady, top)
    }
    lines = {name: duration_lines(p) for name, p in priced.items()}
    steady_units = calls.count_write_units_per_due_write
    top_units = steady_units * hour_count_share(design, 5_000_000, 1_000_000)
    steady_line = f"DynamoDB writes: the minutes' counts ({steady_units:.4f} an execution)"
    top_line = f"DynamoDB writes: the minutes' counts ({top_units:.4f} an execution)"
    assert lines[steady.name].get(steady_line, 0.0) == pytest.approx(steady_units * write), (
        "the hot minute split: the steady hour's count writes are priced, a line of their own"
    )
    assert lines[top.name].get(top_line, 0.0) == pytest.approx(top_units * write), (
        "the hot minute split: the top of the hour's count writes are priced as its thinner "
        "sample writes them"
    )
    assert priced[top.name].write_units_by_table["due"] == pytest.approx(
        replace(calls, count_write_units_per_due_write=0.0).write_units_by_table["due"] + top_units
    ), "the due table's load holds the count writes the hour makes"
