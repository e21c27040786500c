"""A call that takes seconds costs its lease's heartbeats and the watchdog's rechecks: the cost
model and the DynamoDB billing count them from the job's duration, fixed or lognormal.

The lognormal expectations are computed here independently of the model: the model sums, over
the instants a heartbeat or a recheck would happen, the share of calls still running then
(`statistics.NormalDist`); these tests weight each possible count by the probability of the
durations that give it, with the CDF written out through `math.erf`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from infra.functions import WATCHDOG
from takt_cli.capacity.billing import HourlyLoad, billing_report, table_loads
from takt_cli.capacity.model import CallProfile, Design, with_claim_items
from takt_cli.capacity.prices import US_EAST_1
from takt_cli.capacity.profiles import load_profile
from takt_cli.capacity.scenarios import (
    SEED,
    all_in_cost,
    cost_per_hour,
    dynamodb_billing,
    profile_components,
    scaled_ahead,
)

WRITE = 0.625  # $ per million on-demand write units
READ = 0.125


def _calls(
    seconds: float, sigma: float = 0.0, lease_sec: float = 30.0, heartbeat_sec: float = 10.0
) -> CallProfile:
    """Calls of `seconds` under a lease renewed every `heartbeat_sec`: the model's arithmetic,
    whatever the runtime's defaults."""
    return replace(
        CallProfile(),
        target_latency_ms=seconds * 1000,
        target_latency_sigma=sigma,
        lease_sec=lease_sec,
        heartbeat_sec=heartbeat_sec,
    )


def _lognormal_cdf(seconds: float, mean: float, sigma: float) -> float:
    mu = math.log(mean) - sigma**2 / 2
    return 0.5 * (1 + math.erf((math.log(seconds) - mu) / (sigma * math.sqrt(2))))


def _expected_count(instants: list[float], mean: float, sigma: float) -> float:
    """E[how many of the sorted `instants` a call outlasts]: count n for durations between the
    n-th and the next instant."""
    cdf = [_lognormal_cdf(t, mean, sigma) for t in instants]
    between = [cdf[n] - cdf[n - 1] for n in range(1, len(cdf))]
    return sum(n * p for n, p in enumerate(between, start=1)) + len(cdf) * (1 - cdf[-1])


def test_a_fixed_25_s_call_heartbeats_twice_and_is_never_rechecked() -> None:
    calls = _calls(25.0)

    assert calls.heartbeats_per_execution == 2
    assert calls.rechecks_per_execution == 0
    measured = _calls(0.05).write_units_by_table
    assert calls.write_units_by_table == {**measured, "executions": measured["executions"] + 2}
    assert calls.read_units_by_table == _calls(0.05).read_units_by_table


def test_a_50_ms_call_adds_nothing_to_what_was_measured_the_watch_lists_and_the_counts() -> None:
    calls = replace(
        _calls(0.05),
        open_index_write_units_per_execution=0.25,
        measured_read_units_by_table={"jobs": 3.0, "executions": 0.1},
    )

    assert calls.heartbeats_per_execution == calls.rechecks_per_execution == 0
    assert calls.late_indexed_per_execution == 0
    assert calls.write_units_by_table == pytest.approx(
        {
            "executions": calls.table_write_units_per_execution,
            "executions/open": 0.25,
            "jobs": calls.jobs_write_units_per_execution,
            "due": calls.due_write_units_per_item
            + calls.watch_due_write_units_per_execution
            + calls.count_write_units_per_due_write,
        }
    )
    assert calls.read_units_by_table == pytest.approx(
        {"jobs": 3.0, "executions": 0.1 + calls.watch_executions_read_units_per_execution}
    )


def test_a_10_s_call_heartbeats_once_at_its_tenth_second() -> None:
    # The beat at 10 s goes out before the answer's own round trip brings it back.
    assert _calls(10.0).heartbeats_per_execution == 1


def test_a_run_past_the_resend_wait_is_rechecked_once_a_lease_period() -> None:
    # Found at its watch list's check time (30 s) plus the clock margin (2 s) and half a sweep
    # (5 s), then at each lease expiry the last heartbeat set (60 s, 90 s) plus the same 7 s.
    forty_five = _calls(45.0)
    hundred = _calls(100.0)

    assert forty_five.heartbeats_per_execution == 4
    assert forty_five.rechecks_per_execution == forty_five.late_indexed_per_execution == 1
    assert hundred.heartbeats_per_execution == 10
    assert hundred.rechecks_per_execution == 3  # at 37, 67 and 97 s
    assert hundred.late_indexed_per_execution == 1
    measured = _calls(0.05)
    # Each recheck: a consistent read, the execution and a delete and a put in `open`; the
    # first look also puts it in `open` (the execution and the entry), and its completion
    # takes it out (the entry).
    assert hundred.write_units_by_table["executions"] == measured.write_units_by_table[
        "executions"
    ] + (10 + 3 + 1)
    assert hundred.write_units_by_table["executions/open"] == (
        measured.write_units_by_table.get("executions/open", 0.0) + 2 * 3 + 2
    )
    assert hundred.read_units_by_table["executions"] == pytest.approx(
        measured.read_units_by_table.get("executions", 0.0) + 3
    )


def test_a_call_stops_at_its_jobs_timeout() -> None:
    calls = _calls(1000.0)

    assert calls.heartbeats_per_execution == 29  # at 10 s, 20 s, ... 290 s; 300 s ends it
    assert calls.rechecks_per_execution == 9  # at 37 s, 67 s, ... 277 s


def test_a_lease_shorter_than_the_resend_wait_moves_check_at_at_every_heartbeat() -> None:
    calls = _calls(45.0, lease_sec=20.0)
    measured = _calls(0.05)

    assert calls.rechecks_per_execution == calls.late_indexed_per_execution == 0
    assert calls.write_units_by_table["executions/open"] == (
        measured.write_units_by_table.get("executions/open", 0.0) + 2 * 4
    )


@pytest.mark.parametrize(("mean", "sigma"), [(10.0, 1.0), (20.0, 0.5), (5.0, 2.0)])
def test_lognormal_calls_heartbeat_and_are_rechecked_as_their_durations_say(
    mean: float, sigma: float
) -> None:
    calls = _calls(mean, sigma)
    beats = [10.0 * k for k in range(1, 30)]
    rechecks = [37.0 + 30.0 * k for k in range(9)]

    assert calls.heartbeats_per_execution == pytest.approx(
        _expected_count(beats, mean, sigma), rel=1e-9
    )
    assert calls.rechecks_per_execution == pytest.approx(
        _expected_count(rechecks, mean, sigma), rel=1e-9
    )
    assert calls.late_indexed_per_execution == pytest.approx(
        1 - _lognormal_cdf(37.0, mean, sigma), rel=1e-9
    )


def test_the_seeds_long_tail_heartbeats_about_half_its_runs() -> None:
    """lognormal:10:1.0: the median call (6.1 s) never heartbeats; the tail does, several times."""
    calls = _calls(10.0, 1.0)

    assert calls.heartbeats_per_execution == pytest.approx(0.5649, abs=1e-4)
    assert calls.rechecks_per_execution == pytest.approx(0.0486, abs=1e-4)


def test_the_billing_prices_the_durations_units_on_demand_and_provisioned() -> None:
    calls = _calls(25.0)
    report = billing_report(
        table_loads(calls.write_units_by_table, calls.read_units_by_table), HourlyLoad(1400)
    )
    tables = report["tables"]

    on_demand = report["on_demand"]["usd_per_million_executions"]  # type: ignore[index]
    measured = _calls(0.05).units_per_execution()
    assert on_demand == pytest.approx(
        (measured["write_units_per_execution"] + 2) * WRITE
        + measured["read_units_per_execution"] * READ,
        abs=0.001,
    )
    # The executions table holds its 3 measured units and 2 heartbeats at 70 %.
    assert tables["executions"]["provisioned_write_capacity_units"] == round(  # type: ignore[index]
        1400 * 5 / 0.7
    )


def test_the_scenario_report_shows_the_durations_lines_and_prices_them_both_ways() -> None:
    calls = _calls(45.0)
    scenario = SEED[0]
    components = profile_components(calls)

    shipped = all_in_cost(scenario, Design(), calls, components)
    lines = shipped["usd_per_million_breakdown"]

    assert lines["DynamoDB writes: heartbeats (4.000 an execution)"] == pytest.approx(4 * WRITE)
    assert lines["DynamoDB writes: watchdog rechecks (1.000 an execution)"] == pytest.approx(
        (3 + 3) * WRITE
    )
    assert lines["DynamoDB reads: watchdog rechecks (1.000 an execution)"] == pytest.approx(READ)
    assert lines["DynamoDB writes"] == pytest.approx(calls.measured_write_units * WRITE)
    assert lines["DynamoDB writes: watch items"] == pytest.approx(
        calls.watch_due_write_units_per_execution * WRITE, abs=1e-3
    )
    # On demand, the billing's all-in figure is the breakdown's: the same units priced the
    # same way, the duration's included on both sides.
    report = {"as_shipped": shipped, "as_shipped_on_fargate_scaled_ahead": shipped}
    billing = dynamodb_billing(scenario, calls, report)
    assert billing["all_in_usd_per_million_executions"]["as_shipped"]["on demand"] == (
        pytest.approx(shipped["usd_per_million_executions"], abs=0.02)
    )
    assert calls.units_per_execution()["heartbeat_write_units_per_execution"] == 4
    assert calls.units_per_execution()["recheck_write_units_per_execution"] == 3 + 3
    assert calls.units_per_execution()["recheck_read_units_per_execution"] == 1


def test_the_watch_lists_units_are_billed_where_they_land() -> None:
    unwatched = replace(
        _calls(0.05),
        watch_due_write_units_per_execution=0.0,
        watch_executions_read_units_per_execution=0.0,
    )
    calls = replace(
        unwatched,
        watch_due_write_units_per_execution=0.1,
        watch_executions_read_units_per_execution=0.5,
    )

    assert calls.write_units_by_table["due"] == pytest.approx(
        unwatched.write_units_by_table["due"] + 0.1
    )
    assert calls.read_units_by_table["executions"] == pytest.approx(
        unwatched.read_units_by_table.get("executions", 0.0) + 0.5
    )


def test_an_80_s_lease_with_20_s_heartbeats_spares_the_seeds_10_s_calls_their_heartbeat() -> None:
    """docs/CAPACITY.md's seed-scale setting (`-c leaseSec=80 -c heartbeatSec=20`)."""
    shipped = _calls(10)
    longer = replace(shipped, heartbeat_sec=20.0, lease_sec=80.0)

    assert shipped.write_units_by_table["executions"] - longer.write_units_by_table[
        "executions"
    ] == pytest.approx(1.0)
    assert longer.heartbeat_instants()[0] == 20.0


def _cheapest_all_in(calls: CallProfile) -> float:
    """The seed's steady hour with 10 s calls on the cheapest design the model prices: Fargate
    workers scaled ahead, every table provisioned."""
    scenario = SEED[0]
    fleet = all_in_cost(
        scenario, scaled_ahead(scenario, Design(), calls), calls, profile_components(calls)
    )
    report = {"as_shipped": fleet, "as_shipped_on_fargate_scaled_ahead": fleet}
    all_in = dynamodb_billing(scenario, calls, report)["all_in_usd_per_million_executions"]
    return float(all_in["as_shipped_on_fargate_scaled_ahead"]["provisioned"])


def test_a_write_path_of_3_units_brings_the_seeds_steady_hour_under_2_usd_a_million() -> None:
    """docs/CAPACITY.md, "How far the write path can take the cost": the model with the write
    path cut to 3 units (a record created at its lease and completed, the job's advance; no
    due-item writes, no watch list, a lease long enough that a 10 s call renews nothing), and
    then to the history's 2 alone, and to none, each on the cheapest design, the claimer priced
    from its claims (`CallProfile.claimer_usd_per_million`) and the Fargate tasks reaching their
    targets through a public IPv4 address each, with no NAT gateway (`fargateEgress`), under the
    seed profile's lease (a 10 s call renews none) and the reads measured at the seed's claims."""
    seed = load_profile("seed")
    # As the steady hour prices it: the cursor's write shared by claims of 1,400 items a second.
    shipped = with_claim_items(seed.timed(_calls(10)), 1400, seed.design())
    deleting = replace(shipped, due_cursor=False)
    three = replace(
        deleting,
        lease_written_table_write_units_per_execution=2.0,
        jobs_write_units_per_execution=1.0,
        due_write_units_per_item=0.0,
        watch_due_write_units_per_execution=0.0,
        count_write_units_per_due_write=0.0,
        heartbeat_sec=20.0,
        lease_sec=60.0,
    )
    two = replace(three, jobs_write_units_per_execution=0.0)
    none = replace(two, lease_written_table_write_units_per_execution=0.0)

    # As shipped: the execution written by its lease (`recordAtLease`) and the fired due items
    # passed by the claim cursor (`dueCursor`), 4.21 units.
    assert shipped.record_at_lease and shipped.due_cursor
    assert sum(shipped.write_units_by_table.values()) == pytest.approx(4.206, abs=0.001)
    assert _cheapest_all_in(shipped) == pytest.approx(1.95, abs=0.005), (
        "the claim cursor brings the shipped path under $2/M"
    )
    assert sum(deleting.write_units_by_table.values()) == pytest.approx(5.16)
    assert _cheapest_all_in(deleting) == pytest.approx(2.20, abs=0.005), (
        "each fired due item deleted, one unit more"
    )
    assert sum(three.write_units_by_table.values()) == pytest.approx(3.0)
    assert sum(two.write_units_by_table.values()) == pytest.approx(2.0)
    assert _cheapest_all_in(replace(deleting, record_at_lease=False)) == pytest.approx(
        2.48, abs=0.005
    ), "the claim writing the execution, one unit more"

    assert _cheapest_all_in(three) == pytest.approx(1.64, abs=0.005), (
        "the 3-unit write path comes under $2/M"
    )
    assert _cheapest_all_in(two) == pytest.approx(1.38, abs=0.005), (
        "the history's 2 units alone come under $2/M"
    )
    assert _cheapest_all_in(none) == pytest.approx(0.87, abs=0.005)
    scenario = SEED[0]
    lines = all_in_cost(
        scenario, scaled_ahead(scenario, Design(), two), two, profile_components(two)
    )["usd_per_million_breakdown"]
    # What is left for DynamoDB under $2/M once everything else is paid.
    rest = sum(usd for name, usd in lines.items() if not name.startswith("DynamoDB"))
    assert rest == pytest.approx(0.629, abs=0.002)


def test_the_hourly_loops_price_the_watchdog_at_the_profiles_interval() -> None:
    """The watchdog's six sweeps run 50 s of a minute 10 s apart (seed, tenx) and the whole
    minute 60 s apart (small): the hourly figure follows the profile's `watchdogIntervalSec`, as
    `takt cost idle` does."""
    small = load_profile("small").timed(CallProfile())
    seed = load_profile(None).timed(CallProfile())
    assert (seed.watchdog_interval_sec, small.watchdog_interval_sec) == (10.0, 60.0)

    def loops(calls: CallProfile) -> float:
        return cost_per_hour(SEED[0], Design(), 1.0, calls)["scheduler_and_watchdog"]

    ten_seconds_more = 60 * 10 * WATCHDOG.memory_mb / 1024 * US_EAST_1.lambda_gb_second
    assert loops(replace(seed, watchdog_interval_sec=60.0)) - loops(seed) == pytest.approx(
        ten_seconds_more, abs=0.001
    )
