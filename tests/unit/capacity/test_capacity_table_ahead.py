"""The watchdog's table step raises capacity from the same units per execution the cost model
prices (`takt.dispatch.ahead.WRITE_UNITS_PER_EXECUTION` and `READ_UNITS_PER_EXECUTION` against
`CallProfile`), so what is held ahead of a burst is what the burst writes and reads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from takt.dispatch.ahead import READ_UNITS_PER_EXECUTION, TableLoad
from takt_cli.capacity.model import CallProfile


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
