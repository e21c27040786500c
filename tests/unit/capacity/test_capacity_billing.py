"""DynamoDB priced on demand and provisioned, table by table, against known answers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from takt_cli.capacity.billing import (
    TABLES,
    HourlyLoad,
    TableLoad,
    bill_table,
    billing_report,
    table_loads,
    units_by_table,
)
from takt_cli.capacity.model import CallProfile, profile_from_report, with_claim_items
from takt_cli.capacity.prices import US_EAST_1
from takt_cli.capacity.profiles import load_profile
from takt_cli.capacity.scenarios import SEED, dynamodb_billing

DEPLOY_DOC = Path(__file__).resolve().parents[3] / "docs" / "DEPLOY.md"
# The seed's calls, 10 s each, under the seed profile's lease (45 s renewed every 15 s): none
# renews it.
# The seed's call profile as its steady hour prices it: its lease, its write path, and its
# cursor's write shared by the claims of 1,400 items a second (`scenarios.run_scenario`).
SEED_CALLS = with_claim_items(
    load_profile("seed").timed(replace(CallProfile(), target_latency_ms=10_000)),
    1400,
    load_profile("seed").design(),
)


def test_a_steady_table_holds_its_load_over_the_target_utilization() -> None:
    bill = bill_table(TableLoad("executions", write_units=1.0), HourlyLoad(steady_per_sec=700))

    assert bill.write_capacity == pytest.approx(1000)
    assert bill.read_capacity == 1  # the floor a provisioned table always pays
    assert bill.provisioned_usd_per_hour == pytest.approx(1000 * 0.00065 + 0.00013)
    assert bill.on_demand_usd_per_hour == pytest.approx(700 * 3600 * 0.625 / 1e6)
    assert bill.cheaper == "provisioned"


def test_a_burst_in_one_minute_holds_the_busiest_minutes_rate_all_hour() -> None:
    load = HourlyLoad(steady_per_sec=100, burst=60_000)
    bill = bill_table(TableLoad("executions", write_units=1.0), load, target_utilization=0.5)

    assert load.executions == 100 * 3600 + 60_000
    assert bill.write_capacity == pytest.approx((100 + 1000) / 0.5)
    # Raised only around the burst: the busiest minute's capacity for 8 minutes (5 ahead, the
    # minute, its tail, the minute step's wait to lower it), the steady capacity for the other 52.
    steady = 200 * 0.00065 + 0.00013
    assert bill.provisioned_raised_ahead_usd_per_hour == pytest.approx(
        bill.provisioned_usd_per_hour * 8 / 60 + steady * 52 / 60
    )


def test_an_idle_table_is_cheaper_on_demand() -> None:
    bill = bill_table(TableLoad("idempotency"), HourlyLoad(steady_per_sec=1400))

    assert bill.on_demand_usd_per_hour == 0
    assert bill.provisioned_usd_per_hour > 0
    assert bill.cheaper == "on demand"


def test_the_seeds_steady_hour_and_its_burst_hour_are_cheaper_provisioned_as_the_app_holds_it() -> (
    None
):
    calls = CallProfile()
    tables = table_loads(calls.write_units_by_table, calls.read_units_by_table)
    steady = billing_report(tables, HourlyLoad(1400))
    burst = billing_report(tables, HourlyLoad(1400, 1_000_000))

    assert [t.name for t in tables] == list(TABLES)
    assert steady["cheaper"] == "provisioned"
    assert burst["cheaper"] == "provisioned", "raised ahead of the burst and lowered after it"
    held_all_hour = burst["provisioned"]["usd_per_hour"]  # type: ignore[index]
    assert held_all_hour > burst["on_demand"]["usd_per_hour"], (  # type: ignore[index]
        "a burst's capacity held all hour would cost more than on demand"
    )
    on_demand = steady["on_demand"]["usd_per_million_executions"]  # type: ignore[index]
    # 6.0 measured write units, the watch lists' 0.1 and the minutes' counts 0.06 at $0.625/M;
    # 3.109 measured read units and the watch check's 0.5 at $0.125/M.
    assert on_demand == pytest.approx(6.16 * 0.625 + 3.609 * 0.125, abs=0.001)


def test_a_bench_reports_units_are_summed_by_table_and_index() -> None:
    units = units_by_table(
        {
            "claimer: takt-executions PutItem": 1.0,
            "claimer: takt-executions/open PutItem": 1.0,
            "outside: takt-executions UpdateItem": 2.0,
            "worker: executions-1a2b/open UpdateItem": 1.0,
            "claimer: takt-jobs BatchGetItem": 1.0,
        }
    )

    assert units == {"executions": 3.0, "executions/open": 2.0, "jobs": 1.0}


def test_a_profile_report_carries_its_reads_by_table() -> None:
    report = {
        "metered_per_execution": {
            "aws_calls_by_function": {},
            "dynamodb_write_units": {"claimer: takt-due DeleteItem": 1.0},
            "dynamodb_read_units": {
                "claimer: takt-jobs BatchGetItem": 1.0,
                "outside: takt-tenants GetItem": 0.5,
            },
            "invocations": {},
        }
    }

    calls = profile_from_report(report)

    assert calls.read_units_by_table == {"jobs": 1.0, "tenants": 0.5}
    assert calls.write_units_by_table["due"] == 1.0


def test_the_scenario_report_prices_the_shipped_design_all_in_each_way() -> None:
    dynamodb = {"DynamoDB writes": 5.0, "DynamoDB reads": 0.5, "DynamoDB storage (history)": 0.1}
    report = {
        "as_shipped": {"usd_per_million_breakdown": {**dynamodb, "Lambda worker": 2.4}},
        "as_shipped_on_fargate_scaled_ahead": {
            "usd_per_million_breakdown": {**dynamodb, "Fargate workers": 0.4}
        },
    }

    billing = dynamodb_billing(SEED[0], CallProfile(), report)

    provisioned = billing["provisioned"]["usd_per_million_executions"]
    on_demand = billing["on_demand"]["usd_per_million_executions"]
    all_in = billing["all_in_usd_per_million_executions"]
    assert all_in["as_shipped"]["provisioned"] == pytest.approx(2.5 + provisioned, abs=0.01)
    assert all_in["as_shipped_on_fargate_scaled_ahead"]["on demand"] == pytest.approx(
        0.5 + on_demand, abs=0.01
    )


def test_deploy_docs_figures_are_the_models() -> None:
    """docs/DEPLOY.md, "Table billing": $/M each way at the seed's steady hour and its burst
    hour, and what an idle provisioned deployment pays at the app's default minimum (5 units
    each way for every table and index)."""
    calls = SEED_CALLS
    tables = table_loads(calls.write_units_by_table, calls.read_units_by_table)
    steady = billing_report(tables, HourlyLoad(1400))
    burst = billing_report(tables, HourlyLoad(1400, 1_000_000))
    idle = (
        len(TABLES)
        * 5
        * (US_EAST_1.dynamodb_write_capacity_unit_hour + US_EAST_1.dynamodb_read_capacity_unit_hour)
        * 730
    )
    doc = " ".join(DEPLOY_DOC.read_text().split())

    def per_million(report: dict[str, object], key: str) -> str:
        return f"${report[key]['usd_per_million_executions']:.2f}"  # type: ignore[index]

    assert f"costs **{per_million(steady, 'provisioned')} per million executions**" in doc
    assert f"against **{per_million(steady, 'on_demand')} on demand**" in doc
    assert f"({per_million(burst, 'provisioned')}/M)" in doc
    raised = per_million(burst, "provisioned_raised_ahead_of_the_burst")
    assert f"that hour costs {raised}/M against {per_million(burst, 'on_demand')} on demand" in doc
    assert f"**${idle:.2f} a month**" in doc
    assert f"default 5 units each way, {len(TABLES)} tables and indexes" in doc


def test_capacity_docs_table_rows_are_the_models_steady_hour() -> None:
    """docs/CAPACITY.md, "DynamoDB on demand or provisioned": each loaded table's row, priced
    from the call profile with the seed's 10 s calls."""
    calls = SEED_CALLS
    doc = " ".join((DEPLOY_DOC.parent / "CAPACITY.md").read_text().split())
    assert calls.record_at_lease and calls.executions_write_units == 2
    assert (
        "measured executions 2 (the lease's put and the completion, the seed's and tenx's "
        "`recordAtLease`; 3 when the claim writes the execution), `open` 0, jobs 1.17, due 1.83 "
        "write units and the watch lists' 0.1; jobs 3, due 0.084, tenants 0.025 read units and "
        "the watch check's 0.5"
    ) in doc
    report = billing_report(
        table_loads(calls.write_units_by_table, calls.read_units_by_table), HourlyLoad(1400)
    )
    tables: dict[str, dict[str, float]] = report["tables"]  # type: ignore[assignment]

    for name in ("executions", "executions/open", "jobs", "due", "tenants"):
        bill = tables[name]
        row = (
            f"| {name} | {bill['on_demand_usd_per_hour']:.2f} | "
            f"{bill['provisioned_usd_per_hour']:.2f} | "
            f"{bill['provisioned_write_capacity_units']:,} / "
            f"{bill['provisioned_read_capacity_units']:,} | {bill['cheaper']} |"
        )
        assert row in doc
