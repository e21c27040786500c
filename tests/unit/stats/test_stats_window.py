"""The in-memory metrics window `takt local` answers the stats route from: per-minute sums,
counts, maxima and percentiles, as CloudWatch would give them."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.observability import MetricUnit
from takt.stats import MetricQuery, MetricsWindow

START = datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC)
COUNT = MetricUnit.Count
MS = MetricUnit.Milliseconds


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def window(clock: ManualClock) -> MetricsWindow:
    return MetricsWindow(clock)


def series(window: MetricsWindow, metric: str, stat: str, minutes: int = 3) -> list[float | None]:
    query = MetricQuery("k", metric, stat)  # type: ignore[arg-type]
    return window.minutely([query], START, minutes)["k"]


def test_counts_are_summed_per_minute(window: MetricsWindow, clock: ManualClock) -> None:
    window.record("Succeeded", COUNT, 1)
    window.record("Succeeded", COUNT, 2)
    clock.advance(60)
    window.record("Succeeded", COUNT, 5)

    assert series(window, "Succeeded", "Sum") == [3, 5, None]


def test_a_minute_without_values_is_none_not_zero(window: MetricsWindow) -> None:
    window.record("Dispatched", COUNT, 0)

    assert series(window, "Dispatched", "Sum") == [0, None, None]
    assert series(window, "Dead", "Sum") == [None, None, None]


def test_sample_count_and_maximum(window: MetricsWindow) -> None:
    for value in (3, 9, 4):
        window.record("ScheduleLag", MS, value)

    assert series(window, "ScheduleLag", "SampleCount", 1) == [3]
    assert series(window, "ScheduleLag", "Maximum", 1) == [9]


def test_percentiles_are_within_two_percent_of_the_exact_ones(window: MetricsWindow) -> None:
    values = [random.Random(7).lognormvariate(4, 1) for _ in range(5000)]
    for value in values:
        window.record("ScheduleLag", MS, value)
    ordered = sorted(values)

    p50 = series(window, "ScheduleLag", "p50", 1)[0]
    p99 = series(window, "ScheduleLag", "p99", 1)[0]

    assert p50 == pytest.approx(ordered[2499], rel=0.02)
    assert p99 == pytest.approx(ordered[4949], rel=0.02)


def test_a_percentile_of_one_value_is_that_value(window: MetricsWindow) -> None:
    window.record("ScheduleLag", MS, 42)

    assert series(window, "ScheduleLag", "p99", 1) == [42]


def test_zero_values_have_a_zero_percentile(window: MetricsWindow) -> None:
    for _ in range(10):
        window.record("ScheduleLag", MS, 0)

    assert series(window, "ScheduleLag", "p50", 1) == [0]


def test_minutes_older_than_the_window_are_forgotten(clock: ManualClock) -> None:
    window = MetricsWindow(clock, keep_minutes=2)
    window.record("Succeeded", COUNT, 1)
    clock.advance(120)
    window.record("Succeeded", COUNT, 1)

    assert series(window, "Succeeded", "Sum") == [None, None, 1]


def test_every_query_gets_its_own_series(window: MetricsWindow, clock: ManualClock) -> None:
    window.record("Succeeded", COUNT, 1)
    window.record("Failed", COUNT, 2)
    queries = [MetricQuery("ok", "Succeeded", "Sum"), MetricQuery("bad", "Failed", "Sum")]

    answer = window.minutely(queries, START - timedelta(minutes=1), 2)

    assert answer == {"ok": [None, 1], "bad": [None, 2]}
