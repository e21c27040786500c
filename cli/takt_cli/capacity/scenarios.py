"""The seed's three scenarios, each run as a profile ships (its settings and the account quotas
it is sized with: `takt_cli.capacity.profiles`, the seed's by default) and as planned.

Planning is the profile's design when it meets the scenario's target; otherwise a search: for
each candidate shard count N and claim parallelism (smallest first)
the simulator runs once with default quotas; the quotas are then raised to what that run and the
scenario ask for (concurrency to what the run wanted, write throughput to the busiest minute's
rate, with 20 % headroom) and it runs again, until the target holds (p99 start lag under 2 s at
steady state; a top-of-the-hour burst all dispatched within 60 s) or the candidates run out,
which the report then says. Burst scenarios are also run as shipped with each piece of the top
of the hour's path turned off in turn (`as_shipped_without`): what each is worth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from infra.driver import DRIVER_LIFE_SEC
from infra.functions import SCHEDULER, WATCHDOG
from takt.dispatch.ahead import FleetPlan, Forecast
from takt_cli.capacity.billing import HourlyLoad, as_billed, billing_report, table_loads
from takt_cli.capacity.cost import (
    DYNAMODB_THROUGHPUT,
    LogsAndMetrics,
    alternatives,
    default_components,
    fargate_task_hour_usd,
    worker_wait_usd_per_million,
)
from takt_cli.capacity.model import (
    WATCHDOG_SWEEPS,
    CallProfile,
    Design,
    Limits,
    watchdog_busy_sec,
    with_claim_items,
    with_minute_counts,
)
from takt_cli.capacity.prices import US_EAST_1
from takt_cli.capacity.profiles import Profile, load_profile
from takt_cli.capacity.sim import Load, SimResult, Simulator
from takt_cli.capacity.worker_sqs import FargateSqs

SHARD_CANDIDATES = (64, 128, 256, 512, 1024)
PARALLELISM_CANDIDATES = (1, 8, 32)
MAX_LANE_CONCURRENCY = 1000
HEADROOM = 0.8
# Tasks scaled ahead for a busy minute run this long in its hour: counted 5 minutes ahead, the
# minute itself, then the target tracking's scale-in (5 minutes of cooldown and its alarms).
SCALED_AHEAD_HOURS = 12 / 60
# Fargate's task launch rate (an account's token bucket): 100 at once, then 20 a second.
FARGATE_LAUNCH_BURST = 100
FARGATE_LAUNCHES_PER_SEC = 20
# Lambda's Powertools-instrumented claimer: one invocation per busy partition a second.
CLAIMER_INVOCATIONS_PER_EXECUTION = 0.01
# What an execution on Fargate sends through the VPC's NAT gateway: the call to its target and
# its answer, the lane's SQS calls and the worker's metrics (DynamoDB goes through the free
# gateway endpoint). An assumption: a target's own payloads may be larger.
NAT_BYTES_PER_EXECUTION = 4096
# How long after the load ends a run may take to finish its work; what is left is reported.
DRAIN_SEC = 300.0


@dataclass(frozen=True)
class Scenario:
    name: str
    load: Load
    # What must hold: p99 start lag (steady), or the burst dispatched within this many seconds.
    max_p99_start_lag_sec: float | None = None
    burst_dispatched_within_sec: float | None = None
    executions_per_hour: float = 5_000_000


SEED = (
    Scenario(
        "steady: 10 M stored, 5 M hourly, 1,400/s",
        Load(steady_per_sec=1400, duration_sec=120),
        max_p99_start_lag_sec=2.0,
    ),
    Scenario(
        "top of the hour: 1,000,000 due in the first minute, 20 % at second 0",
        Load(steady_per_sec=1400, duration_sec=150, burst=1_000_000, burst_at=30),
        burst_dispatched_within_sec=60,
    ),
    Scenario(
        "ten times the seed: 10,000,000 in the first minute (200,000 dispatches/s at peak)",
        Load(steady_per_sec=14000, duration_sec=150, burst=10_000_000, burst_at=30),
        burst_dispatched_within_sec=60,
        executions_per_hour=50_000_000,
    ),
)


def meets(scenario: Scenario, result: SimResult) -> bool:
    if result.undispatched > 1 or result.unstarted > 1:
        return False
    if scenario.max_p99_start_lag_sec is not None:
        return result.start_lag["p99"] < scenario.max_p99_start_lag_sec
    if scenario.burst_dispatched_within_sec is not None:
        within = result.burst_dispatched_within_sec
        return within is not None and within <= scenario.burst_dispatched_within_sec
    return True


def _pow2(value: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1.0, value))))


def quotas_asked(
    scenario: Scenario, result: SimResult, calls: CallProfile, shipped: Design
) -> tuple[Design, Limits, dict[str, Any]]:
    """The design and limits a run asks for. Write throughput is sized from the scenario's
    busiest minute (what must be written per second to keep up, with headroom), not from the
    run, whose throttled work understates its demand; concurrency from what the run wanted."""
    d = result.design
    load = scenario.load
    rate = load.steady_per_sec + load.burst / 60
    # Workers to keep up with the busiest minute: each batch holds an invocation for its rounds
    # of messages (one when they run at once; as many as messages when one after another) and
    # for the wait of a message claimed ahead (about half the horizon).
    keep_up = (
        rate / d.batch_size * (d.batch_waves * calls.message_seconds(d) + d.dispatch_ahead_sec / 2)
    )
    wanted = max(keep_up, float(result.peak_concurrency["worker"])) / HEADROOM
    lane = max(5, min(MAX_LANE_CONCURRENCY, math.ceil(wanted)))
    open_shards = max(
        d.open_shards,
        _pow2(rate * calls.write_units_by_table.get("executions/open", 0.0) / 1000 / HEADROOM),
    )
    # The execution's own writes and what its call's duration adds (heartbeats, rechecks).
    table = max(4000.0, rate * calls.write_units_by_table.get("executions", 0.0) / HEADROOM)
    account = math.ceil((lane + result.peak_concurrency["claimer"] / HEADROOM) / 1000) * 1000
    design = replace(d, lane_max_concurrency=lane, open_shards=open_shards)
    limits = Limits(
        account_concurrency=max(1000, account),
        new_table_write_units_per_sec=table,
        table_max_write_units_per_sec=max(40000.0, table),
    )
    asks: dict[str, Any] = {
        "Lambda concurrent executions (account, default 1,000)": limits.account_concurrency,
        f"lane maxConcurrency (lanes.default, shipped {shipped.lane_max_concurrency})": (lane),
        f"TAKT_OPEN_SHARDS (open index partitions, shipped {shipped.open_shards})": open_shards,
        "executions table on-demand quota (write units/s, default 40,000)": round(
            limits.table_max_write_units_per_sec
        ),
        "executions table warm throughput (write units/s, before the first burst)": round(table),
    }
    per_tenant = rate * calls.jobs_write_units_per_execution / d.tenants
    if per_tenant > 1000 * HEADROOM:
        asks["jobs table"] = (
            f"{per_tenant:.0f} write units/s per tenant over {d.tenants} tenants: a tenant "
            "this large needs its jobs spread over more partition keys"
        )
    if wanted > MAX_LANE_CONCURRENCY:
        asks["workers beyond one event source's 1,000 concurrent batches"] = (
            f"{math.ceil(wanted)} wanted: split the lane over "
            f"{math.ceil(wanted / MAX_LANE_CONCURRENCY)} queues (the seed's partitioned queues), "
            "or run a batch's messages in parallel in the worker"
        )
    return design, limits, asks


def shipped_design(scenario: Scenario, profile: Profile, calls: CallProfile) -> Design:
    """What `profile` deploys, for `scenario`: its design, and when its Fargate worker serves
    the lane, the fleet its scale-ahead step sets for the busiest minute (within the profile's
    task bounds; its minimum when the step is off)."""
    design = profile.design()
    fleet = profile.fargate()
    if fleet is None:
        return design
    wanted = busiest_minute_tasks(scenario, design, calls) if fleet.scale_ahead_minutes else 0
    return replace(design, fargate_tasks=min(fleet.max_tasks, max(fleet.min_tasks, wanted)))


def plan(
    scenario: Scenario,
    calls: CallProfile | None = None,
    *,
    metered: Mapping[str, float] | None = None,
    profile: Profile | None = None,
) -> dict[str, Any]:
    """Run `scenario` as `profile` ships it (the seed's by default, with its lease and
    heartbeats: `Profile.timed`), then search for the smallest design that meets its target;
    then both on Fargate workers scaled ahead of the due index instead of the worker function.
    `metered` is the cost per million by component a local run measured (50 ms target)."""
    profile = profile or load_profile(None)
    load = scenario.load
    calls = with_claim_items(
        with_minute_counts(
            profile.timed(calls or CallProfile()),
            profile.design(),
            scenario.executions_per_hour,
            load.burst,
        ),
        load.steady_per_sec,
        profile.design(),
    )
    components = dict(metered or profile_components(calls))
    design_shipped = shipped_design(scenario, profile, calls)
    limits_shipped = profile.quotas.limits()
    shipped = Simulator(
        scenario.load, design_shipped, limits_shipped, calls, drain_sec=DRAIN_SEC
    ).run()
    found: tuple[SimResult, dict[str, Any], Limits] | None = None
    last: tuple[SimResult, dict[str, Any], Limits] | None = None
    if meets(scenario, shipped):
        # What the profile ships meets the target: that is the plan (a search would run the
        # scenario dozens of times, ten times the seed's for minutes each).
        found = (shipped, quotas_asked(scenario, shipped, calls, design_shipped)[2], limits_shipped)
    for shards in SHARD_CANDIDATES if found is None else ():
        for parallelism in PARALLELISM_CANDIDATES:
            design = replace(design_shipped, due_shards=shards, claim_parallelism=parallelism)
            first = Simulator(
                scenario.load, design, limits_shipped, calls, drain_sec=DRAIN_SEC
            ).run()
            design, limits, _ = quotas_asked(scenario, first, calls, design_shipped)
            result = Simulator(scenario.load, design, limits, calls, drain_sec=DRAIN_SEC).run()
            # What the planned run itself still wanted (its backlog is gone or smaller).
            asks = quotas_asked(scenario, result, calls, design_shipped)[2]
            last = (result, asks, limits)
            if meets(scenario, result):
                found = last
                break
        if found:
            break
    chosen = found or last
    assert chosen is not None
    result, asks, limits = chosen
    report: dict[str, Any] = {
        "scenario": scenario.name,
        "target": (
            f"p99 start lag < {scenario.max_p99_start_lag_sec} s"
            if scenario.max_p99_start_lag_sec is not None
            else f"burst dispatched within {scenario.burst_dispatched_within_sec} s"
        ),
        "job_seconds": calls.job.describe(),
        "dynamodb_units_per_execution": {
            name: round(units, 3) for name, units in calls.units_per_execution().items()
        },
        "profile": profile.describe(),
        "as_shipped": {
            **summarize(scenario, shipped),
            **billed_as_shipped(
                all_in_cost(scenario, shipped.design, calls, components), scenario, calls, profile
            ),
            "table_billing": profile.table_billing,
            "fargate_tasks": design_shipped.fargate_tasks,
        },
        "as_shipped_on_fargate_scaled_ahead": billed_as_shipped(
            on_fargate(scenario, design_shipped, limits_shipped, calls, components),
            scenario,
            calls,
            profile,
        ),
        "planned": {
            **summarize(scenario, result),
            **all_in_cost(scenario, result.design, calls, components),
            "meets_target": found is not None,
            "quotas_and_settings": asks,
        },
        "cost_per_hour_usd": cost_per_hour(
            scenario,
            result.design,
            sum(with_claimer(scenario, result.design, calls, components).values()),
            calls,
        ),
        "alternatives": alternatives(job_seconds=calls.job.mean_sec),
    }
    report["dynamodb_billing"] = dynamodb_billing(scenario, calls, report)
    if scenario.burst_dispatched_within_sec is not None:
        report["as_shipped_without"] = without_each_piece(
            scenario, design_shipped, limits_shipped, calls
        )
        report["planned_on_fargate_scaled_ahead"] = on_fargate(
            scenario, result.design, limits, calls, components
        )
    return report


def billed_as_shipped(
    cost: Mapping[str, Any], scenario: Scenario, calls: CallProfile, profile: Profile
) -> dict[str, Any]:
    """`all_in_cost`'s report with DynamoDB priced as `profile` bills its tables
    (`takt_cli.capacity.billing.as_billed`: on demand, or provisioned and raised ahead)."""
    lines = as_billed(
        cost["usd_per_million_breakdown"],
        profile.table_billing,
        table_loads(calls.write_units_by_table, calls.read_units_by_table),
        HourlyLoad(scenario.load.steady_per_sec, scenario.load.burst),
        target_utilization=profile.table_target_utilization / 100,
    )
    return {
        **cost,
        "usd_per_million_executions": round(sum(lines.values()), 2),
        "usd_per_million_breakdown": {name: round(usd, 3) for name, usd in lines.items()},
    }


def dynamodb_billing(
    scenario: Scenario, calls: CallProfile, report: Mapping[str, Any]
) -> dict[str, Any]:
    """The tables on demand and provisioned (`takt_cli.capacity.billing`) under the scenario's
    hour, and the all-in cost per million of the shipped design (on the worker function and on
    Fargate) with its DynamoDB lines (the measured ones and the duration's) priced each way
    from the same units."""
    load = HourlyLoad(scenario.load.steady_per_sec, scenario.load.burst)
    billing = billing_report(
        table_loads(calls.write_units_by_table, calls.read_units_by_table), load
    )
    all_in: dict[str, dict[str, float]] = {}
    for design in ("as_shipped", "as_shipped_on_fargate_scaled_ahead"):
        lines: Mapping[str, float] = report[design]["usd_per_million_breakdown"]
        rest = sum(usd for name, usd in lines.items() if not name.startswith(DYNAMODB_THROUGHPUT))
        all_in[design] = {
            mode: round(rest + billing[key]["usd_per_million_executions"], 2)  # type: ignore[index]
            for mode, key in (
                ("on demand", "on_demand"),
                ("provisioned", "provisioned"),
                ("each table its cheaper way", "each_table_its_cheaper_way"),
            )
        }
    return {**billing, "all_in_usd_per_million_executions": all_in}


def fleet_tasks(per_minute: float, calls: CallProfile, slots: int) -> int:
    """The tasks `takt.dispatch.ahead` sets as the service's minimum for a minute holding
    `per_minute` executions (the same plan the watchdog runs)."""
    plan = FleetPlan(job_sec=calls.job.mean_sec, slots=slots, min_tasks=1, max_tasks=10**6)
    return plan.tasks_for(Forecast(minutes=((_ANY_MINUTE, round(per_minute)),), complete=True))


def busiest_minute_tasks(scenario: Scenario, design: Design, calls: CallProfile) -> int:
    """The fleet the scale-ahead step sets for the scenario's busiest minute."""
    load = scenario.load
    return fleet_tasks(load.steady_per_sec * 60 + load.burst, calls, design.fargate_slots)


_ANY_MINUTE = datetime(2026, 1, 1, tzinfo=UTC)


def scaled_ahead(scenario: Scenario, design: Design, calls: CallProfile) -> Design:
    """`design` with the Fargate fleet the scale-ahead step sets for the scenario's busiest
    minute serving the lane (the design's task size and slots: the profile's)."""
    return replace(design, fargate_tasks=busiest_minute_tasks(scenario, design, calls))


def on_fargate(
    scenario: Scenario,
    design: Design,
    limits: Limits,
    calls: CallProfile,
    metered: Mapping[str, float],
) -> dict[str, Any]:
    """`design` with Fargate workers serving the lane, as many tasks as the scale-ahead step
    sets for the scenario's busiest minute, there before it falls due; the worker function and
    its lane concurrency play no part. Reports every quota the fleet needs."""
    load = scenario.load
    fleet = scaled_ahead(scenario, design, calls)
    tasks = fleet.fargate_tasks
    result = Simulator(load, fleet, limits, calls, drain_sec=DRAIN_SEC).run()
    launch_sec = max(0, tasks - FARGATE_LAUNCH_BURST) / FARGATE_LAUNCHES_PER_SEC
    summary = summarize(scenario, result)
    return {
        **summary,
        "fargate_tasks_scaled_ahead": tasks,
        "fargate_slots_busy_peak": result.peak_concurrency.get("fargate_slots_busy", 0),
        **all_in_cost(scenario, fleet, calls, metered),
        "quotas_and_settings": {
            "Fargate On-Demand vCPU resource count (account quota)": tasks * fleet.fargate_vcpu,
            "ECS tasks per service (default 5,000)": tasks,
            "Fargate launch rate (100 at once, then 20/s): seconds to start the fleet": (
                f"{launch_sec:.0f} (the scale-ahead step starts it 5 minutes before)"
            ),
            "Lambda concurrent executions (account, default 1,000): claimers": (
                summary["lambda_concurrency_peak"]["claimer"]
            ),
            "executions table on-demand quota (write units/s, default 40,000)": round(
                limits.table_max_write_units_per_sec
            ),
            "executions table warm throughput (write units/s, before the first burst)": round(
                limits.new_table_write_units_per_sec
            ),
            "TAKT_OPEN_SHARDS (open index partitions)": design.open_shards,
            "context": (
                f"fargateWorker true, fargateLanes default, fargateSlots {fleet.fargate_slots}, "
                f"fargateCpu {round(fleet.fargate_vcpu * 1024)}, fargateMaxTasks >= {tasks}, "
                f"fargateScaleAheadMinutes 5, fargateJobSec {calls.job.mean_sec:g}"
            ),
        },
    }


def summarize(scenario: Scenario, result: SimResult) -> dict[str, Any]:
    series = result.dispatched_per_sec
    last = max(series, default=0)
    # A claim sends its messages in one go, so a one-second series is spiky: five-second means.
    every = 5
    return {
        "meets_target": meets(scenario, result),
        "due_shards_N": result.design.due_shards,
        "claim_parallelism": result.design.claim_parallelism,
        "open_shards": result.design.open_shards,
        "lane_max_concurrency": result.design.lane_max_concurrency,
        "dispatch_lag_sec": result.dispatch_lag,
        "start_lag_sec": result.start_lag,
        "burst_dispatched_within_sec": result.burst_dispatched_within_sec,
        "dispatch_rate_per_sec": {
            f"{t}-{t + every - 1}s": round(
                sum(series.get(s, 0.0) for s in range(t, t + every)) / every
            )
            for t in range(0, last + 1, every)
        },
        "peak_dispatch_rate_per_sec_5s_mean": round(
            max(
                (
                    sum(series.get(s, 0.0) for s in range(t, t + every)) / every
                    for t in range(last + 1)
                ),
                default=0.0,
            )
        ),
        "lambda_concurrency_peak": result.peak_concurrency,
        "lambda_concurrency_wanted": result.concurrency_wanted,
        "peak_write_units_per_sec": result.peak_write_units,
        "write_capacity_per_sec": result.write_capacity,
        "throttled_max_wait_sec": result.throttled,
        "not_dispatched": round(result.undispatched),
        "not_started": round(result.unstarted),
        "peak_sqs_in_flight": result.peak_sqs_in_flight,
    }


# What each piece of the top of the hour's path is, turned off in the shipped design.
WITHOUT: dict[str, dict[str, Any]] = {
    "claim ahead (burst_ahead_sec 0: the minute's first second claimed at it)": {
        "burst_ahead_sec": 0.0
    },
    "split (dueSplitMax 1: a hot minute in N partitions)": {"due_split_max": 1},
    "lease-time delete (the Fargate worker holds its message for the whole call)": {
        "fargate_deletes_at_lease": False
    },
}


def without_each_piece(
    scenario: Scenario, shipped: Design, limits: Limits, calls: CallProfile
) -> dict[str, Any]:
    """The goal rows of the shipped design with each piece of the top of the hour's path turned
    off in turn (`WITHOUT`), and with SQS's in-flight limit left out of the model: what each
    piece is worth, beside `as_shipped`."""
    runs = {
        name: Simulator(
            scenario.load, replace(shipped, **change), limits, calls, drain_sec=DRAIN_SEC
        ).run()
        for name, change in WITHOUT.items()
    }
    runs["in-flight limit (SQS's 120,000 per queue left out of the model)"] = Simulator(
        scenario.load,
        shipped,
        replace(limits, sqs_in_flight_per_queue=10**12),
        calls,
        drain_sec=DRAIN_SEC,
    ).run()
    return {name: goal_rows(result) for name, result in runs.items()}


def goal_rows(result: SimResult) -> dict[str, Any]:
    """What the issue's goals read of a run."""
    return {
        "burst_dispatched_within_sec": result.burst_dispatched_within_sec,
        "start_lag_sec": result.start_lag,
        "not_dispatched": round(result.undispatched),
        "not_started": round(result.unstarted),
        "peak_sqs_in_flight": result.peak_sqs_in_flight,
    }


def all_in_cost(
    scenario: Scenario, design: Design, calls: CallProfile, metered: Mapping[str, float]
) -> dict[str, Any]:
    """The cost per million executions, all in, component by component: what the local run
    metered (its 50 ms target), but the claimer priced from the claims the scenario's steady
    rate makes (`CallProfile.claimer_usd_per_million`); the DynamoDB work the call's duration
    adds (heartbeats, the watchdog's rechecks: `duration_lines`); the workers (the function's
    wait on calls of the profile's length, each batch billed until its slowest call ends; or
    the Fargate fleet's task-hours); CloudWatch logs and metrics (`LogsAndMetrics`, in place
    of the metered log bytes); and the fixed cost of the loops and probes spread over the
    scenario's executions."""
    job = calls.job
    logs = LogsAndMetrics()
    priced = with_claimer(scenario, design, calls, metered)
    lines = {k: v for k, v in priced.items() if k != "CloudWatch Logs ingestion"}
    lines.update(duration_lines(calls))
    base_usd = sum(metered.values())
    if design.fargate_tasks:
        lines.pop("Lambda worker", None)
        steady_tasks = fleet_tasks(scenario.load.steady_per_sec * 60, calls, design.fargate_slots)
        task_hours = float(steady_tasks)
        if scenario.load.burst:
            task_hours += (design.fargate_tasks - steady_tasks) * SCALED_AHEAD_HOURS
        per_million = 1e6 / scenario.executions_per_hour
        hour_usd = fargate_task_hour_usd(design.fargate_vcpu, design.fargate_memory_gb)
        lines[
            f"Fargate workers ({task_hours:.0f} task-hours an hour, "
            f"{design.fargate_vcpu:g} vCPU {design.fargate_memory_gb:g} GB)"
        ] = task_hours * hour_usd * per_million
        if design.fargate_nat_gateway:
            lines["NAT gateway (its hours and 4 KB an execution)"] = (
                US_EAST_1.nat_gateway_hour * per_million
                + NAT_BYTES_PER_EXECUTION * 1e6 / 1e9 * US_EAST_1.nat_gateway_per_gb
            )
        else:
            lines["public IPv4 addresses (one a task-hour)"] = (
                task_hours * US_EAST_1.public_ipv4_hour * per_million
            )
        usd, detail = logs.fargate_usd_per_million(task_hours * per_million)
        # The metered SQS line is the Lambda path's (its event source's receives and deletes):
        # on Fargate it is what `takt worker` itself sends, and the claim's sends.
        lines.pop("SQS requests", None)
        requests = fargate_sqs_requests(scenario, design, steady_tasks, task_hours)
        lines[f"SQS requests: the Fargate worker's ({requests:.3f} an execution)"] = (
            requests * US_EAST_1.sqs_request_per_million
        )
    else:
        billed = job.expected_max(max(1, min(design.batch_concurrency, design.batch_size)))
        lines[f"Lambda worker waiting on the call (batch held {billed:.1f} s)"] = (
            worker_wait_usd_per_million(
                billed,
                batch_size=design.batch_size,
                batch_concurrency=design.batch_concurrency,
                memory_mb=design.worker_memory_mb,
            )
        )
        usd, detail = logs.lambda_usd_per_million(
            design.batch_size, CLAIMER_INVOCATIONS_PER_EXECUTION
        )
    lines[f"CloudWatch logs and metrics ({detail})"] = usd
    hourly = cost_per_hour(scenario, design, base_usd, calls)
    fixed = hourly["ticker_probes"] + hourly["scheduler_and_watchdog"]
    lines["fixed cost spread over the executions"] = fixed / scenario.executions_per_hour * 1e6
    return {
        "job_seconds": job.mean_sec,
        "usd_per_million_executions": round(sum(lines.values()), 2),
        "usd_per_million_breakdown": {name: round(usd, 3) for name, usd in lines.items()},
    }


def with_claimer(
    scenario: Scenario, design: Design, calls: CallProfile, metered: Mapping[str, float]
) -> dict[str, float]:
    """`metered` with its claimer line priced from the claims the scenario's steady rate makes
    on `design` (`CallProfile.claimer_usd_per_million`), not as a local run's small claims
    metered it."""
    usd, detail = calls.claimer_usd_per_million(scenario.load.steady_per_sec, design)
    out = {k: v for k, v in metered.items() if k != "Lambda claimer"}
    out[f"Lambda claimer ({detail})"] = usd
    return out


def fargate_sqs_requests(
    scenario: Scenario, design: Design, steady_tasks: int, task_hours: float
) -> float:
    """SQS requests an execution costs on the Fargate fleet (`FargateSqs`): the steady load's
    sends, receives and deletes, and the fleet's idle polling over its task-hours."""
    rate = scenario.load.steady_per_sec
    sqs = FargateSqs(
        per_sec=rate,
        tasks=steady_tasks,
        slots=design.fargate_slots,
        partitions=design.partitions_of(rate * 60),
    )
    idle = task_hours * sqs.idle_polls_per_task_hour() / scenario.executions_per_hour
    return sum(sqs.per_execution().values()) + idle


def profile_components(calls: CallProfile) -> dict[str, float]:
    """The metered cost by component when no local run's report is given: the defaults, with
    DynamoDB priced from the call profile's measured units."""
    return default_components(
        calls.measured_write_units, sum(calls.measured_read_units_by_table.values())
    )


def duration_lines(calls: CallProfile) -> dict[str, float]:
    """What the call's duration, the claims' watch lists and the minutes' counts add to
    DynamoDB on demand, each as its own line of the cost breakdown: the lease's heartbeats, the
    watchdog's rechecks of runs longer than the resend wait, the watch items' writes and reads,
    and the count writes of the hot minute split (`CallProfile.count_write_units_per_due_write`
    over the scenario's hour, `hour_count_share`). A call that answers at once adds only the
    watch lists' and the counts'."""
    units = calls.units_per_execution()
    write = US_EAST_1.dynamodb_write_unit_per_million
    read = US_EAST_1.dynamodb_read_unit_per_million
    heartbeats = units["heartbeats_per_execution"]
    rechecks = units["rechecks_per_execution"]
    counts = units["count_write_units_per_execution"]
    lines = {
        f"DynamoDB writes: heartbeats ({heartbeats:.3f} an execution)": (
            units["heartbeat_write_units_per_execution"] * write
        ),
        f"DynamoDB writes: watchdog rechecks ({rechecks:.3f} an execution)": (
            units["recheck_write_units_per_execution"] * write
        ),
        f"DynamoDB reads: watchdog rechecks ({rechecks:.3f} an execution)": (
            units["recheck_read_units_per_execution"] * read
        ),
        "DynamoDB writes: watch items": units["watch_write_units_per_execution"] * write,
        "DynamoDB reads: watch items": units["watch_read_units_per_execution"] * read,
        f"DynamoDB writes: the minutes' counts ({counts:.4f} an execution)": counts * write,
    }
    return {name: usd for name, usd in lines.items() if usd}


def cost_per_hour(
    scenario: Scenario, design: Design, usd_per_million: float, calls: CallProfile
) -> dict[str, float]:
    """Executions at the metered cost per million, plus what runs whether or not anything is
    due: the ticker's probes (two minute buckets per shard a second, half a read unit each, and
    with the claim cursor two queries a probe: the late items with the cursor, then past it;
    takt.store.due `has_due`) and the scheduler's and watchdog's minute-long loops, at the memory
    the app gives them."""
    prices = US_EAST_1
    executions = scenario.executions_per_hour * usd_per_million / 1e6
    queries = 2 if calls.due_cursor else 1
    probes = (
        queries * 2 * design.due_shards * 3600 * 0.5 * prices.dynamodb_read_unit_per_million / 1e6
    )
    # The scheduler's drivers at the memory the app gives them (it follows N, and doubles with
    # the cursor's two-query probes: infra/functions.py `SCHEDULER`), each minute's driver
    # alive DRIVER_LIFE_SEC, and the watchdog's sweeps at the profile's interval (`takt cost
    # idle` prices both the same).
    scheduler_gb = SCHEDULER.memory_for(design.due_shards, due_cursor=calls.due_cursor) / 1024
    watchdog_gb = WATCHDOG.memory_mb / 1024
    watchdog_sec = watchdog_busy_sec(WATCHDOG_SWEEPS, calls.watchdog_interval_sec)
    gb_seconds = 60 * (scheduler_gb * DRIVER_LIFE_SEC + watchdog_gb * watchdog_sec)
    loops = gb_seconds * prices.lambda_gb_second
    return {
        "executions": round(executions, 2),
        "ticker_probes": round(probes, 3),
        "scheduler_and_watchdog": round(loops, 3),
        "total": round(executions + probes + loops, 2),
    }


@dataclass(frozen=True)
class NoisyNeighbour:
    """Tenant A floods `flood` executions due at one instant; every other tenant (B) runs the
    seed's steady load. The design is the steady scenario's planned one (N, claim parallelism,
    B's lane maxConcurrency), with a second lane for A's overflow and room in the account."""

    flood: float = 1_000_000
    steady_per_sec: float = 1400
    flood_at: float = 30.0
    duration_sec: float = 150.0
    # The steady scenario's plan (docs/CAPACITY.md): N=1024 would claim the flood faster, but
    # its ticker probes alone take over a second a tick and B's lag suffers without any flood.
    due_shards: int = 128
    claim_parallelism: int = 8
    lane_max_concurrency: int = 333
    overflow_max_concurrency: int = 1000
    account_concurrency: int = 3000
    # The top-of-the-hour plan's `open` index and table throughput (docs/CAPACITY.md): a million
    # executions within minutes need them whichever lane they run in.
    open_shards: int = 128
    table_write_units_per_sec: float = 80_000.0


def noisy_neighbour(
    calls: CallProfile | None = None, scenario: NoisyNeighbour | None = None
) -> dict[str, Any]:
    """B's start lag alone, beside A's flood with fairness off (one lane), and as shipped (fair
    claims and drain-sized shares on); and A's flood alone, as shipped.

    The fair case is modeled as two runs sharing the account: B's lane carries B alone (A's
    claims are held to what the lanes drain and its messages beyond the fast lanes' headroom go
    to the overflow lane, while bounded claims take B's due items whole), and the overflow lane
    carries the flood with its own maxConcurrency. A alone, as shipped, is a flood with both
    lanes' concurrency: its claims grow with the lanes' drain and its messages fill the fast
    lane and the overflow lane (work-conserving).
    Each run has the tables' full write throughput to itself, which is optimistic for the pair;
    the report shows both runs' peak write units so the sum can be checked against the quota.
    """
    calls = calls or CallProfile()
    s = scenario or NoisyNeighbour()
    design = Design(
        due_shards=s.due_shards,
        claim_parallelism=s.claim_parallelism,
        lane_max_concurrency=s.lane_max_concurrency,
        open_shards=s.open_shards,
    )
    limits = Limits(
        account_concurrency=s.account_concurrency,
        new_table_write_units_per_sec=s.table_write_units_per_sec,
        table_max_write_units_per_sec=s.table_write_units_per_sec,
    )
    steady = Load(steady_per_sec=s.steady_per_sec, duration_sec=s.duration_sec)
    flooded = replace(steady, flood=s.flood, flood_at=s.flood_at)

    def run(load: Load, d: Design, lim: Limits) -> SimResult:
        # Every run starts from the steady state: warm pools and tables sized for B's load.
        return Simulator(load, d, lim, calls, warm_rate=s.steady_per_sec, drain_sec=DRAIN_SEC).run()

    alone = run(steady, design, limits)
    one_lane = run(flooded, design, limits)
    b_lane = run(
        steady,
        design,
        replace(limits, account_concurrency=s.account_concurrency - s.overflow_max_concurrency),
    )
    a_lane = run(
        Load(steady_per_sec=0.0, duration_sec=s.duration_sec, flood=s.flood, flood_at=s.flood_at),
        replace(design, lane_max_concurrency=s.overflow_max_concurrency),
        replace(
            limits,
            account_concurrency=s.account_concurrency - round(b_lane.peak_concurrency["total"]),
        ),
    )

    a_alone = run(
        Load(steady_per_sec=0.0, duration_sec=s.duration_sec, flood=s.flood, flood_at=s.flood_at),
        replace(design, lane_max_concurrency=s.lane_max_concurrency + s.overflow_max_concurrency),
        limits,
    )

    def flood(result: SimResult) -> dict[str, Any]:
        within = result.flood_started_within_sec
        return {
            "a_started": result.flood_started,
            "a_all_started_within_sec": within,
            # Started per second from the flood's instant to its last start, or to the run's end.
            "a_executions_per_sec": round(
                s.flood / within
                if within
                else result.flood_started / (s.duration_sec + DRAIN_SEC - s.flood_at)
            ),
        }

    return {
        "scenario": (
            f"noisy neighbour: tenant A floods {s.flood:,.0f} due at once beside "
            f"{s.steady_per_sec:,.0f}/s from the others (B)"
        ),
        "settings": {**s.__dict__, "drain_sec": DRAIN_SEC},
        "b_alone": {"start_lag_sec": alone.start_lag},
        "one_lane_fairness_off": {
            "b_start_lag_sec": one_lane.others_start_lag,
            **flood(one_lane),
            "peak_write_units_per_sec": one_lane.peak_write_units,
        },
        "as_shipped_fair": {
            "b_start_lag_sec": b_lane.start_lag,
            **flood(a_lane),
            "peak_write_units_per_sec": {
                "b_lane_run": b_lane.peak_write_units,
                "overflow_lane_run": a_lane.peak_write_units,
            },
            "lambda_concurrency_peak": {
                "b_lane_run": b_lane.peak_concurrency,
                "overflow_lane_run": a_lane.peak_concurrency,
            },
        },
        "a_alone_as_shipped": {
            **flood(a_alone),
            "peak_write_units_per_sec": a_alone.peak_write_units,
        },
    }
