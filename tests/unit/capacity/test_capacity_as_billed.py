"""`takt bench simulate`'s `as_shipped` prices DynamoDB as the profile bills its tables: on demand
as metered, or provisioned with the capacity the watchdog holds (the steady load's all hour, the
busiest minute's for the minutes it raises it ahead: `takt_cli.capacity.billing.as_billed`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from takt.dispatch.ahead import hold_after_increase
from takt_cli.capacity.billing import (
    RAISED_AHEAD_MINUTES,
    HourlyLoad,
    TableLoad,
    as_billed,
    bill_table,
    table_loads,
)
from takt_cli.capacity.model import CallProfile
from takt_cli.capacity.profiles import load_profile
from takt_cli.capacity.scenarios import SEED, billed_as_shipped

LINES = {
    "DynamoDB writes": 4.0,
    "DynamoDB writes: heartbeats (1.000 an execution)": 0.6,
    "DynamoDB reads": 0.5,
    "DynamoDB storage (history)": 0.05,
    "Lambda claimer": 0.5,
}
TABLE = (TableLoad("executions", write_units=4.0, read_units=1.0),)


def test_on_demand_keeps_the_metered_lines() -> None:
    assert as_billed(LINES, "onDemand", TABLE, HourlyLoad(1400)) == LINES


def test_provisioned_prices_the_capacity_held_in_place_of_the_units_used() -> None:
    load = HourlyLoad(1400)

    lines = as_billed(LINES, "provisioned", TABLE, load)

    held = bill_table(TABLE[0], load).provisioned_usd_per_hour * 1e6 / load.executions
    (provisioned,) = [usd for name, usd in lines.items() if "provisioned" in name]
    assert provisioned == pytest.approx(held)
    assert {name for name in lines if "provisioned" not in name} == {
        "DynamoDB storage (history)",
        "Lambda claimer",
    }, "every throughput line (writes, heartbeats, reads) is replaced; storage stays"


def test_a_burst_is_held_at_its_minutes_rate_only_for_the_minutes_the_watchdog_raises_it() -> None:
    load = HourlyLoad(1400, 1_000_000)
    bill = bill_table(TABLE[0], load)
    raised = RAISED_AHEAD_MINUTES / 60

    (usd,) = [
        v for k, v in as_billed(LINES, "provisioned", TABLE, load).items() if "provisioned" in k
    ]

    steady = bill_table(TABLE[0], HourlyLoad(1400)).provisioned_usd_per_hour
    expected = bill.provisioned_usd_per_hour * raised + steady * (1 - raised)
    assert usd == pytest.approx(expected * 1e6 / load.executions)
    assert RAISED_AHEAD_MINUTES == hold_after_increase(5) // timedelta(minutes=1) + 1 == 8, (
        "5 minutes ahead, the minute, its tail, and the minute step's wait until it lowers"
    )


def test_as_shipped_is_priced_as_the_profile_bills_its_tables() -> None:
    calls = replace(CallProfile(), target_latency_ms=10_000)
    scenario = SEED[0]
    cost = {"usd_per_million_executions": 5.65, "usd_per_million_breakdown": LINES}

    on_demand = billed_as_shipped(
        cost, scenario, calls, load_profile("seed", ["tableBilling=onDemand"])
    )
    provisioned = billed_as_shipped(cost, scenario, calls, load_profile("seed"))

    assert on_demand["usd_per_million_breakdown"] == LINES
    loads = table_loads(calls.write_units_by_table, calls.read_units_by_table)
    held = sum(bill_table(t, HourlyLoad(1400)).provisioned_usd_per_hour for t in loads)
    assert provisioned["usd_per_million_executions"] == pytest.approx(
        0.55 + held * 1e6 / HourlyLoad(1400).executions, abs=0.01
    ), "the seed, whose tableBilling is provisioned, is priced provisioned as shipped"
