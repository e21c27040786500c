"""The watchdog's table step raises capacity from the same units per execution the cost model
prices (`takt.dispatch.ahead.WRITE_UNITS_PER_EXECUTION` and `READ_UNITS_PER_EXECUTION` against
`CallProfile`), so what is held ahead of a burst is what the burst writes and reads."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from takt.dispatch.ahead import (
    READ_UNITS_PER_EXECUTION,
    WRITE_UNITS_PER_EXECUTION,
    Forecast,
    ScaledTable,
    TableLoad,
)
from takt_cli.capacity.model import CallProfile
from takt_cli.capacity.profiles import load_profile

SCALED = tuple(WRITE_UNITS_PER_EXECUTION)


def test_the_table_steps_units_per_execution_are_the_cost_models() -> None:
    calls = replace(CallProfile(), target_latency_ms=10_000)  # the seed's 10 s calls
    load = TableLoad(job_sec=10.0, heartbeat_sec=calls.heartbeat_sec, target_utilization=70)

    for table, units in calls.write_units_by_table.items():
        assert load.units_per_execution(table) == pytest.approx(units, abs=0.05), (
            f"the table step raises {table} for what an execution writes there, as priced"
        )


def test_the_table_steps_reads_per_execution_are_the_cost_models() -> None:
    calls = replace(CallProfile(), target_latency_ms=10_000)

    for table, units in READ_UNITS_PER_EXECUTION.items():
        assert calls.read_units_by_table[table] == pytest.approx(units, abs=0.05), (
            f"the table step raises {table}'s reads for what an execution reads there, as priced"
        )


ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("profile", "doc", "sentence"),
    [
        (
            "seed",
            "DEPLOY.md",
            "in the seed's top minute they want {executions_w:,}, {jobs_r:,} and {due_w:,}",
        ),
        (
            "tenx",
            "CAPACITY.md",
            "{executions_w:,} write units raised ahead on the executions table",
        ),
    ],
)
def test_the_docs_give_what_the_table_step_raises_for_each_profiles_top_minute(
    profile: str, doc: str, sentence: str
) -> None:
    """docs/DEPLOY.md's seed maximums and docs/CAPACITY.md's reason tenx stays on demand: what
    `TableLoad.capacity_for` asks in the busiest minute, the burst and a minute of the steady
    load (the seed's 1,000,000 and 1,400/s; tenx's 10,000,000 and 14,000/s)."""
    calls = load_profile(profile).timed(replace(CallProfile(), target_latency_ms=10_000))
    load = TableLoad(job_sec=10.0, heartbeat_sec=calls.heartbeat_sec, target_utilization=70)
    scale = 10 if profile == "tenx" else 1
    minute = Forecast(
        minutes=((datetime(2026, 3, 2, tzinfo=UTC), scale * (1_000_000 + 1400 * 60)),),
        complete=True,
    )
    wants = {kind: load.capacity_for(ScaledTable(kind, kind, 5), minute) for kind in SCALED}

    text = " ".join((ROOT / "docs" / doc).read_text().split())
    assert (
        sentence.format(
            executions_w=wants["executions"].write,
            jobs_r=wants["jobs"].read,
            due_w=wants["due"].write,
        )
        in text
    )
