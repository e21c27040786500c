"""The profiles: each the whole context in one place (`takt_cli/profiles.json`), synthesized as
the simulator reads it; `-c profile=small`, a deployment for a few thousand jobs whose idle cost
stays under $8 a month, priced by `takt cost idle` from the templates the CDK CLI would
synthesize."""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App

from infra.context import PROFILES, ContextError, DeployConfig
from infra.driver import driver_timeout_sec
from takt_cli.capacity.idle import base_lines, fargate_lines, render, table_capacity_lines
from takt_cli.capacity.profiles import load_profile
from tests.infra.cli_synth import cli_context

DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md"
README = Path(__file__).resolve().parents[2] / "README.md"
CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"
SMALL_BUDGET_USD = 8.0


def _templates(assembly: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    def load(name: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((assembly / f"{name}.template.json").read_text())
        return loaded

    return load("TaktStateful"), load("TaktStateless")


def _parts(assembly: Path) -> dict[str, float]:
    """`takt cost idle`'s tables for a synth: the stacks, the provisioned tables' minimum and the
    Fargate worker (0 where the profile has none)."""
    stateful, stateless = _templates(assembly)
    return {
        "stacks": sum(line.usd for line in base_lines(stateful, stateless)),
        "tables": sum(line.usd for line in table_capacity_lines(stateful)),
        "fargate": sum(line.usd for line in fargate_lines(stateless)),
    }


def _total(assembly: Path) -> float:
    return sum(_parts(assembly).values())


def test_the_small_profile_idles_under_8_usd_a_month(
    cli_assemblies: Callable[[str], Path],
) -> None:
    small, seed = _total(cli_assemblies("small")), _total(cli_assemblies("default"))

    assert small <= SMALL_BUDGET_USD < seed, (
        f"idle cost: the small profile idles at ${small:.2f} a month, over ${SMALL_BUDGET_USD:g}"
    )


def test_deploy_doc_shows_the_small_profiles_idle_cost(
    cli_assemblies: Callable[[str], Path],
) -> None:
    table = render(base_lines(*_templates(cli_assemblies("small"))))

    assert table in DEPLOY_DOC.read_text(), "regenerate with `takt cost idle DIR`"


@pytest.mark.parametrize("page", [README, DEPLOY_DOC], ids=lambda page: page.name)
def test_the_prose_gives_each_profiles_idle_cost(
    page: Path, cli_assemblies: Callable[[str], Path]
) -> None:
    text = " ".join(page.read_text().split())

    for profile in ("small", "default"):
        assert f"${_total(cli_assemblies(profile)):.2f}" in text, profile
    # The seed's whole idle cost and each part of it (the stacks, its provisioned tables, its
    # Fargate worker), as `takt cost idle` prints them.
    for part, usd in _parts(cli_assemblies("default")).items():
        assert f"${usd:.2f}" in text, f"the seed's {part}"


def test_the_small_profile_runs_one_small_driver_and_a_single_sweep(
    cli_assemblies: Callable[[str], Path],
) -> None:
    _, stateless = _templates(cli_assemblies("small"))
    functions = {
        logical_id: resource["Properties"]
        for logical_id, resource in stateless["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function" and logical_id.startswith("Functions")
    }
    scheduler = next(p for i, p in functions.items() if i.startswith("FunctionsScheduler"))
    rules = [
        resource["Properties"]
        for logical_id, resource in stateless["Resources"].items()
        if logical_id.startswith("TriggersWatchdogEveryMinute")
        and resource["Type"] == "AWS::Events::Rule"
    ]

    assert (scheduler["MemorySize"], scheduler["Timeout"]) == (128, driver_timeout_sec(1))
    assert scheduler["ReservedConcurrentExecutions"] == 3
    assert [json.loads(t["Input"]) for rule in rules for t in rule["Targets"]] == [{"sweeps": 1}]
    assert not any(
        resource["Type"] == "AWS::CloudWatch::Dashboard"
        for resource in stateless["Resources"].values()
    )
    assert all(p.get("TracingConfig", {}).get("Mode") != "Active" for p in functions.values())


def _indexer_invokes_the_scheduler(stateless: dict[str, Any]) -> bool:
    """Whether the indexer's role may invoke the scheduler function."""
    for logical_id, resource in stateless["Resources"].items():
        if resource["Type"] != "AWS::IAM::Policy" or not logical_id.startswith("FunctionsIndexer"):
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            if "lambda:InvokeFunction" in json.dumps(statement["Action"]) and "Scheduler" in (
                json.dumps(statement["Resource"])
            ):
                return True
    return False


@pytest.mark.parametrize(("variant", "rests"), [("small", True), ("default", False)])
def test_the_small_profiles_driver_rests_and_the_indexer_may_start_one(
    cli_assemblies: Callable[[str], Path], variant: str, rests: bool
) -> None:
    _, stateless = _templates(cli_assemblies(variant))
    variables = {
        logical_id.removeprefix("Functions")[:7]: resource["Properties"]["Environment"]["Variables"]
        for logical_id, resource in stateless["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function" and logical_id.startswith("Functions")
    }

    assert (
        variables["Schedul"].get("TAKT_DRIVER_REST"),
        variables["Indexer"].get("TAKT_DRIVER_REST"),
        "TAKT_SCHEDULER_FUNCTION" in variables["Indexer"],
        _indexer_invokes_the_scheduler(stateless),
    ) == (("true", "true", True, True) if rests else (None, None, False, False)), (
        "rest: the small profile's driver rests and its indexer may start one; the seed's never"
    )


def test_every_profile_key_is_a_context_knob_the_app_reads() -> None:
    """A profile key the app ignored would be a saving only on paper."""
    for profile in PROFILES:
        config = DeployConfig.from_context(App(context=cli_context({"profile": profile})).node)
        assert config.profile == profile
    small = DeployConfig.from_context(App(context=cli_context({"profile": "small"})).node)
    assert (small.tuning.due_shards, small.drivers, small.dashboard, small.driver_rest) == (
        1,
        1,
        False,
        True,
    )


def test_an_unknown_profile_is_refused_by_name() -> None:
    with pytest.raises(ContextError, match="'profile'"):
        DeployConfig.from_context(App(context=cli_context({"profile": "tiny"})).node)


# The variant of tests.infra.cli_synth that synthesizes each profile as `cdk deploy` would.
PROFILE_VARIANTS = {"seed": "default", "small": "small", "tenx": "tenx"}


def test_every_profile_is_the_whole_context_and_cdk_json_repeats_none_of_it() -> None:
    """One place: each profile sets every knob, and cdk.json only names the default profile."""
    shipped = json.loads(CDK_JSON.read_text())["context"]
    keys = {name: set(context) for name, context in PROFILES.items()}

    assert set(PROFILES) == set(PROFILE_VARIANTS)
    assert all(names == keys["seed"] for names in keys.values()), (
        "every profile must be the whole context"
    )
    assert set(shipped) & keys["seed"] == set(), "cdk.json must leave the knobs to the profiles"
    assert shipped["profile"] == "seed"


def test_a_context_value_overrides_the_profiles() -> None:
    """`-c key=value` (or cdk.json) over a profile, as `cdk deploy -c` promises."""
    small = DeployConfig.from_context(
        App(context=cli_context({"profile": "small", "dueShards": "2"})).node
    )

    assert (small.tuning.due_shards, small.tuning.open_shards) == (2, 1), (
        "-c dueShards must override the small profile's, and leave its other knobs"
    )


def _functions(stateless: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in stateless["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function" and logical_id.startswith("Functions")
    }


@pytest.mark.parametrize("name", sorted(PROFILE_VARIANTS))
def test_each_profiles_template_carries_what_the_simulator_simulates(
    name: str, cli_assemblies: Callable[[str], Path]
) -> None:
    """`takt bench simulate --profile-name NAME` simulates what `cdk deploy -c profile=NAME`
    synthesizes: shards, claim parallelism, the claimer's reserved concurrency and memory, the
    lanes' concurrency and batches, the worker's kind and fleet, and the tables' billing."""
    profile = load_profile(name)
    design, fleet = profile.design(), profile.fargate()
    stateful, stateless = _templates(cli_assemblies(PROFILE_VARIANTS[name]))
    functions = _functions(stateless)
    claimer = next(p for i, p in functions.items() if i.startswith("FunctionsClaimer"))
    worker = next(p for i, p in functions.items() if i.startswith("FunctionsWorker"))
    variables = claimer["Environment"]["Variables"]
    resources = [*stateful["Resources"].values(), *stateless["Resources"].values()]
    mappings = sorted(
        (r["Properties"]["BatchSize"], r["Properties"]["ScalingConfig"]["MaximumConcurrency"])
        for r in resources
        if r["Type"] == "AWS::Lambda::EventSourceMapping" and "ScalingConfig" in r["Properties"]
    )
    lanes = PROFILES[name]["lanes"]
    assert isinstance(lanes, dict)
    fargate_lanes = (
        set(profile.context["fargateLanes"]) if profile.context["fargateWorker"] else set()
    )
    services = [r for r in resources if r["Type"] == "AWS::ECS::Service"]
    tables = [r["Properties"] for r in resources if r["Type"] == "AWS::DynamoDB::Table"]

    assert (
        int(variables["TAKT_DUE_SHARDS"]),
        int(variables["TAKT_OPEN_SHARDS"]),
        int(variables["TAKT_CLAIMER_THREADS"]),
    ) == (design.due_shards, design.open_shards, design.claim_parallelism), name
    assert claimer["ReservedConcurrentExecutions"] == design.claimer_concurrency, name
    assert claimer["MemorySize"] == design.claimer_memory_mb, name
    assert int(worker["Environment"]["Variables"]["TAKT_WORKER_BATCH_CONCURRENCY"]) == (
        design.batch_concurrency
    ), name
    assert mappings == sorted(
        (lane.get("batchSize", 10), lane["maxConcurrency"])
        for lane_name, lane in lanes.items()
        if lane_name not in fargate_lanes
    ), f"{name}: the worker function's lanes"
    if fleet is None:
        assert (design.batch_size, design.lane_max_concurrency) in mappings, name
        assert services == [], f"{name} simulates the worker function: no Fargate service"
    else:
        (scaling,) = [
            r["Properties"]
            for r in resources
            if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
            and r["Properties"]["ScalableDimension"] == "ecs:service:DesiredCount"
        ]
        (task,) = [r["Properties"] for r in resources if r["Type"] == "AWS::ECS::TaskDefinition"]
        assert len(services) == 1, f"{name} simulates the Fargate worker"
        assert (scaling["MinCapacity"], scaling["MaxCapacity"]) == (
            fleet.min_tasks,
            fleet.max_tasks,
        ), name
        assert int(task["Cpu"]) / 1024 == design.fargate_vcpu, name
        network = services[0]["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]
        nat_gateways = [r for r in resources if r["Type"] == "AWS::EC2::NatGateway"]
        assert (bool(nat_gateways), network["AssignPublicIp"]) == (
            (True, "DISABLED") if design.fargate_nat_gateway else (False, "ENABLED")
        ), f"{name}: the simulator prices the egress (fargateEgress) the template deploys"
    on_demand = profile.table_billing == "onDemand"
    assert tables and all(
        (t.get("BillingMode") == "PAY_PER_REQUEST") == on_demand for t in tables
    ), f"{name}: tables billed {profile.table_billing}"


@pytest.mark.parametrize("name", ["seed", "tenx"])
def test_each_profiles_task_subnets_hold_its_most_tasks(
    name: str, cli_assemblies: Callable[[str], Path]
) -> None:
    """Each task takes an address of its subnet, and a deployment runs old and new tasks at
    once (200 %), so each of the two zones' task subnets holds `fargateMaxTasks` addresses (AWS
    keeps five); no subnet overlaps another. tenx's 11,292 tasks had two /20s, 4,091 each."""
    fleet = load_profile(name).fargate()
    assert fleet is not None
    _, stateless = _templates(cli_assemblies(PROFILE_VARIANTS[name]))
    subnets = {
        logical_id: ipaddress.ip_network(resource["Properties"]["CidrBlock"])
        for logical_id, resource in stateless["Resources"].items()
        if resource["Type"] == "AWS::EC2::Subnet"
    }
    workers = [net for logical_id, net in subnets.items() if "VpcWorkersSubnet" in logical_id]

    assert len(workers) == 2 and all(net.num_addresses - 5 >= fleet.max_tasks for net in workers), (
        f"{name}: each task subnet must hold fargateMaxTasks ({fleet.max_tasks}) addresses"
    )
    nets = list(subnets.values())
    assert not [a for i, a in enumerate(nets) for b in nets[i + 1 :] if a.overlaps(b)]


def test_deploy_doc_gives_the_tenx_profiles_idle_cost_with_its_fargate_worker(
    cli_assemblies: Callable[[str], Path],
) -> None:
    """Rule: a profile's idle cost in the docs is what `takt cost idle` prices its templates at,
    the Fargate worker's lines included."""
    stateful, stateless = _templates(cli_assemblies("tenx"))
    stacks = sum(line.usd for line in base_lines(stateful, stateless))
    worker = sum(line.usd for line in fargate_lines(stateless))
    text = " ".join(DEPLOY_DOC.read_text().split())

    # The total as the two figures beside it add up.
    for usd in (round(stacks, 2) + round(worker, 2), stacks, worker):
        assert f"${usd:,.2f}" in text, f"DEPLOY.md must give the tenx profile's ${usd:,.2f}"


def _shipped_text(value: object) -> str:
    """A profile value as the settings table writes it: `true`, `default,low`, 1130 (the table's
    thousands separators taken out)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def test_the_settings_table_gives_the_seed_profiles_values() -> None:
    """docs/DEPLOY.md, "Settings": the `shipped` column of each row is the seed profile's value
    for every setting the profile sets (it said `false` and 4 tasks at most for the Fargate
    worker while the seed shipped it with 1,130, and a claimer concurrency of 128 while the seed
    ships 384)."""
    lines = DEPLOY_DOC.read_text().splitlines()
    start = lines.index("| context | shipped | meaning |")
    table = lines[start + 2 : lines.index("", start)]
    shown = {
        key: re.sub(r"(?<=\d),(?=\d{3})", "", value.strip("`"))
        for keys, values in ([cell.strip() for cell in row.split("|")[1:3]] for row in table)
        for key, value in zip(re.findall(r"`(\w+)`", keys), values.split(", "), strict=False)
        if key in PROFILES["seed"] and not isinstance(PROFILES["seed"][key], dict)
    }

    assert len(shown) > 20, f"the settings table's rows were not found: {sorted(shown)}"
    assert shown == {key: _shipped_text(PROFILES["seed"][key]) for key in shown}, (
        "DEPLOY.md's settings table must give the seed profile's values"
    )
    (capacity,) = [
        row.split("|")[2].strip() for row in table if row.startswith("| `tableCapacity`")
    ]
    assert json.loads(capacity.strip("`")) == PROFILES["seed"]["tableCapacity"], (
        "the seed's table capacity ranges, as the profile gives them"
    )
