"""The simulator reads the deployment profiles (`takt_cli/profiles.json`) the CDK app synthesizes
from: a profile, with `-c` overrides, is the design simulated as shipped."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from infra.context import HEARTBEATS_PER_LEASE
from takt.executions.rules import lease_moves_check_at
from takt_cli.capacity.model import CallProfile, Design, Limits
from takt_cli.capacity.profiles import ProfileError, load_profile, profile_names
from takt_cli.capacity.scenarios import SEED, Scenario, busiest_minute_tasks, plan, shipped_design
from takt_cli.capacity.sim import Load
from takt_cli.commands.main import main

TEN_SECOND_CALLS = replace(CallProfile(), target_latency_ms=10_000)
# A scenario small enough for a unit test, with no target beyond finishing everything: the
# planner's search stops at its first candidate.
TINY = Scenario("tiny", Load(steady_per_sec=20, duration_sec=5))


def test_the_seed_profile_is_the_simulators_default_design_with_only_its_table_quota_raised() -> (
    None
):
    """The top of the hour's busiest minute, 18,067 executions a second of 10 s calls at 4 write
    units each (create, lease, a heartbeat, completion), over 80 % headroom, is the one quota
    the seed raises: the executions table's write throughput and warm throughput."""
    seed = load_profile(None)
    table = round((1400 + 1_000_000 / 60) * 4 / 0.8)

    assert seed.name == "seed"
    assert seed.design() == Design(), "the seed profile must be what Design() models as shipped"
    assert seed.quotas.limits() == replace(
        Limits(), table_max_write_units_per_sec=table, new_table_write_units_per_sec=table
    ), "the seed profile raises only the executions table's write quota, to its busiest minute's"


def test_a_context_override_changes_the_simulated_design_as_cdk_deploy_c_does() -> None:
    lanes = json.dumps(
        {
            "high": {"maxConcurrency": 50, "batchingWindowSec": 0},
            "default": {"maxConcurrency": 700, "batchingWindowSec": 1, "batchSize": 50},
            "low": {"maxConcurrency": 5, "batchingWindowSec": 1},
        }
    )
    design = load_profile("seed", ["dueShards=128", f"lanes={lanes}"]).design()

    assert (design.due_shards, design.lane_max_concurrency, design.batch_size) == (128, 700, 50), (
        "-c must override the profile's knobs in the simulated design"
    )
    assert design.claim_parallelism == Design().claim_parallelism


def test_c_profile_names_the_profile_as_profile_name_does() -> None:
    assert load_profile(None, ["profile=small"]) == load_profile("small")
    with pytest.raises(ProfileError, match="disagree"):
        load_profile("tenx", ["profile=small"])


@pytest.mark.parametrize(
    ("name", "overrides", "named"),
    [
        ("tiny", [], "'tiny'"),
        ("seed", ["dueShard=8"], "dueShard"),
        ("seed", ["dueShards=many"], "dueShards"),
        ("seed", ["dueShards"], "KEY=VALUE"),
    ],
)
def test_a_bad_profile_or_override_is_refused_by_name(
    name: str, overrides: list[str], named: str
) -> None:
    with pytest.raises(ProfileError, match=named):
        load_profile(name, overrides).design()


def test_the_tenx_profile_runs_its_fargate_fleet_scaled_ahead_within_its_bounds() -> None:
    """Fargate serves tenx's default lane: the simulated fleet is what the scale-ahead step sets
    for the busiest minute, held between the profile's minimum and maximum tasks."""
    tenx = load_profile("tenx")
    fleet = tenx.fargate()
    assert fleet is not None
    ten_x = SEED[2]

    wanted = busiest_minute_tasks(ten_x, tenx.design(), TEN_SECOND_CALLS)
    capped = shipped_design(ten_x, load_profile("tenx", ["fargateMaxTasks=900"]), TEN_SECOND_CALLS)

    assert shipped_design(ten_x, tenx, TEN_SECOND_CALLS).fargate_tasks == wanted <= fleet.max_tasks
    assert capped.fargate_tasks == 900, "the fleet never exceeds fargateMaxTasks"
    assert shipped_design(SEED[0], load_profile("small"), TEN_SECOND_CALLS).fargate_tasks == 0, (
        "a profile without the Fargate worker simulates the worker function"
    )


def test_the_seed_profile_runs_a_fargate_fleet_as_large_as_the_top_of_the_hour_asks() -> None:
    """The seed carries its top of the hour on the Fargate worker (one event source runs at
    most 1,000 batches, the burst minute's 10 s calls keep about 180,000 running): its
    fargateMaxTasks is the fleet the scale-ahead step sets for that minute, not below it."""
    seed = load_profile("seed")
    fleet = seed.fargate()
    assert fleet is not None, "the seed profile's default lane runs on the Fargate worker"
    top = SEED[1]

    wanted = busiest_minute_tasks(top, seed.design(), TEN_SECOND_CALLS)

    assert shipped_design(top, seed, TEN_SECOND_CALLS).fargate_tasks == wanted == fleet.max_tasks


@pytest.mark.parametrize("name", ["seed", "small", "tenx"])
def test_as_shipped_is_the_named_profiles_design(name: str) -> None:
    profile = load_profile(name)

    shipped = plan(TINY, CallProfile(), profile=profile)["as_shipped"]

    design = profile.design()
    assert (
        shipped["due_shards_N"],
        shipped["claim_parallelism"],
        shipped["open_shards"],
        shipped["lane_max_concurrency"],
        shipped["table_billing"],
    ) == (
        design.due_shards,
        design.claim_parallelism,
        design.open_shards,
        design.lane_max_concurrency,
        profile.table_billing,
    ), f"as_shipped must be the {name} profile's design"
    assert (shipped["fargate_tasks"] > 0) == (profile.fargate() is not None)


def test_every_shipped_profile_is_offered_by_name() -> None:
    assert profile_names() == ("seed", "small", "tenx")


def test_a_bad_override_is_one_line_and_a_non_zero_exit_before_any_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "sim.json"
    args = ["bench", "simulate", "--profile-name", "tenx", "-c", "claimerThreads=x"]

    assert main([*args, "--out", str(out)]) != 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "claimerThreads" in line
    assert not out.exists(), "a refused override simulates nothing"


def test_the_noisy_scenario_refuses_a_profile_it_would_not_simulate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Rule: what `--profile-name` names is what is simulated, or the command says it is not."""
    assert main(["bench", "simulate", "--scenario", "noisy", "--profile-name", "small"]) != 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--scenario noisy" in line and "--profile-name" in line


def test_a_profile_that_meets_the_target_is_its_own_plan() -> None:
    """Rule: the planner searches only when the profile falls short (a search runs the scenario
    dozens of times, ten times the seed's for minutes each). The tiny load is met as shipped,
    so the plan keeps the seed's 32 writes in flight, where the search's first candidate has 1."""
    report = plan(TINY, CallProfile(), profile=load_profile("seed"))

    assert report["as_shipped"]["meets_target"]
    assert report["planned"]["claim_parallelism"] == Design().claim_parallelism == 32, (
        "a profile that meets the target must be the plan, not the search's first candidate"
    )


@pytest.mark.parametrize(
    ("overrides", "heartbeats"),
    # On demand, where the breakdown prices the heartbeats' writes on a line of their own.
    [
        (["leaseSec=40", "heartbeatSec=10", "tableBilling=onDemand"], 1.0),
        (["leaseSec=80", "heartbeatSec=20", "tableBilling=onDemand"], 0.0),
    ],
)
def test_the_simulator_prices_the_heartbeats_of_the_profiles_own_lease(
    overrides: list[str], heartbeats: float
) -> None:
    """Rule: `takt bench simulate` prices the lease the profile deploys (`leaseSec`,
    `heartbeatSec`), not the runtime's defaults: a 10 s call renews a 40 s lease (every 10 s)
    once and an 80 s lease (every 20 s) not at all."""
    report = plan(TINY, TEN_SECOND_CALLS, profile=load_profile("seed", overrides))

    units = report["dynamodb_units_per_execution"]
    assert units["heartbeats_per_execution"] == heartbeats, (
        f"with -c {' -c '.join(overrides)} a 10 s call must renew its lease {heartbeats:g} times"
    )
    priced = [name for name in report["as_shipped"]["usd_per_million_breakdown"] if "heart" in name]
    assert priced == (
        [f"DynamoDB writes: heartbeats ({heartbeats:.3f} an execution)"] * bool(heartbeats)
    ), "the cost breakdown must price the heartbeats the profile's lease makes"


@pytest.mark.parametrize("name", ["seed", "tenx"])
def test_the_seed_scale_profiles_spare_their_10_s_calls_the_heartbeat_keeping_the_lease_rules(
    name: str,
) -> None:
    """Rule (docs/CAPACITY.md, "The lease of the seed's 10 s calls"): a call of the profile's
    `fargateJobSec` ends before its first heartbeat, while the lease still lasts four
    heartbeats (infra.context.HEARTBEATS_PER_LEASE: three lost heartbeats never cost a run) and
    is at least the resend wait, so neither the lease nor a heartbeat moves `check_at`
    (`takt.executions.rules.lease_moves_check_at`)."""
    profile = load_profile(name)
    calls = profile.timed(
        replace(CallProfile(), target_latency_ms=float(profile.context["fargateJobSec"]) * 1000)
    )

    assert calls.heartbeats_per_execution == 0, (
        f"the {name} profile's {profile.context['fargateJobSec']} s calls must renew no lease"
    )
    assert calls.heartbeat_sec * HEARTBEATS_PER_LEASE <= calls.lease_sec, (
        "a lease must outlive three lost heartbeats (DESIGN: a heartbeat every quarter at most)"
    )
    assert not lease_moves_check_at(calls.lease_sec, calls.pending_resend_after_sec), (
        "the lease must not move check_at (the open index's two units a heartbeat)"
    )


def test_a_bad_lease_override_is_one_line_and_a_non_zero_exit_before_any_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Rule: bad input gets one line and a non-zero exit: the lease the simulator now prices
    (`Profile.timed`) is read before any run, as the design's knobs are."""
    out = tmp_path / "sim.json"
    args = ["bench", "simulate", "--scenario", "steady", "-c", "leaseSec=soon", "--out", str(out)]

    assert main(args) != 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "leaseSec" in line and "number" in line, "the refusal must name the bad knob"
    assert not out.exists(), "a refused override simulates nothing"
