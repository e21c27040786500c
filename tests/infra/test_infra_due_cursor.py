"""The claim cursor (`dueCursor`, takt.store.due) as deployed: the seed and tenx profiles turn it on
and `small` keeps it off, in every function and the Fargate worker; and the synth refuses it while
a function that writes due items could commit a write later than the late margin allows.

The templates are the profiles' variants synthesized as the CDK CLI runs them (cli_synth.py),
which test_infra_cli_synth.py also lints: one synthesis serves both files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App

from infra import functions
from infra.app import build
from infra.context import PROFILES, ContextError, DeployConfig, settings_env_var
from infra.functions import INDEXER, SPECS, FunctionSpec, check_due_cursor, timeout_sec
from takt.config import Settings
from takt.resources import DUE
from tests.infra.cli_synth import VARIANTS, cli_context

# Each profile's variant of tests.infra.cli_synth, and the TAKT_DUE_CURSOR its functions read.
CURSOR_BY_VARIANT = {"default": "True", "small": "False", "tenx": "True"}
# What a due write must commit within, less a claim's reach and two clock margins: Settings'
# defaults, which the app leaves as they are (`check_due_cursor`).
MARGINS = ("due_late_margin_sec", "dispatch_ahead_sec", "burst_ahead_sec", "clock_margin_sec")


def _stateless(assembly: Path) -> dict[str, Any]:
    template: dict[str, Any] = json.loads((assembly / "TaktStateless.template.json").read_text())
    return template


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The takt functions' properties, by spec name."""
    by_id = {
        logical_id: resource["Properties"]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function" and logical_id.startswith("Functions")
    }
    return {
        spec.name: next(
            properties
            for logical_id, properties in by_id.items()
            if logical_id.startswith(f"Functions{spec.name.capitalize()}")
        )
        for spec in SPECS
    }


def _environments(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The variables of each takt function and of the Fargate worker's container, if any."""
    found = {
        name: properties["Environment"]["Variables"]
        for name, properties in _functions(template).items()
    }
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::ECS::TaskDefinition":
            for container in resource["Properties"]["ContainerDefinitions"]:
                found[f"fargate/{container['Name']}"] = {
                    item["Name"]: item["Value"] for item in container["Environment"]
                }
    return found


def _config(variant: str, **overrides: Any) -> DeployConfig:
    context = cli_context(VARIANTS[variant] | overrides)
    return DeployConfig.from_context(App(context=context).node)


def _due_writers(specs: tuple[FunctionSpec, ...]) -> list[str]:
    return [spec.name for spec in specs if spec.tables.get(DUE) == "read_write"]


@pytest.mark.parametrize("variant", sorted(CURSOR_BY_VARIANT))
def test_each_profiles_functions_and_fargate_worker_read_its_due_cursor(
    variant: str, cli_assemblies: Callable[[str], Path]
) -> None:
    """Where TAKT_RECORD_AT_LEASE goes, TAKT_DUE_CURSOR goes: every function and the Fargate
    worker, which must agree on where a due item is written and how a claim passes it. None of
    them is given a margin, so Settings' defaults are the ones the synth checks."""
    environments = _environments(_stateless(cli_assemblies(variant)))
    fargate = _config(variant).fargate is not None

    assert len(environments) == len(SPECS) + fargate, f"{variant}: {sorted(environments)}"
    for name, variables in environments.items():
        assert variables["TAKT_DUE_CURSOR"] == CURSOR_BY_VARIANT[variant], f"{variant}: {name}"
        assert "TAKT_RECORD_AT_LEASE" in variables, f"{variant}: {name}"
        assert not {settings_env_var(field) for field in MARGINS} & set(variables), (
            f"{variant}: {name} must run with Settings' margins, which check_due_cursor reads"
        )


@pytest.mark.parametrize("variant", sorted(CURSOR_BY_VARIANT))
def test_the_due_writers_timeouts_checked_are_the_deployed_ones(
    variant: str, cli_assemblies: Callable[[str], Path]
) -> None:
    """`check_due_cursor` reads the due writers' timeouts from their specs (the scheduler's from
    its drivers): the ones the template gives each function."""
    deployed = _functions(_stateless(cli_assemblies(variant)))
    drivers = _config(variant).drivers

    assert _due_writers(SPECS) == ["scheduler", "claimer", "watchdog", "indexer"], (
        "the functions granted writes on the due table; the API's jobs reach it by the indexer"
    )
    for spec in SPECS:
        assert deployed[spec.name]["Timeout"] == timeout_sec(spec, drivers), (
            f"{variant}: {spec.name}"
        )


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_profiles_due_writers_commit_within_the_late_margin(profile: str) -> None:
    """Rule (takt.store.due): with the cursor on, the longest timeout of a function that writes
    due items, a claim's reach and two clock margins stay below the late margin, so no write
    lands behind a cursor; for every shipped profile, whether or not it turns the cursor on."""
    config = DeployConfig.from_context(
        App(context=cli_context({"profile": profile, "dueCursor": "true"})).node
    )

    assert config.tuning.due_cursor
    check_due_cursor(config, SPECS)


def test_the_seed_profile_with_the_cursor_off_is_the_seed_without_it() -> None:
    """docs/DEPLOY.md moves a running `small` deployment to `seed` with `-c dueCursor=false`:
    the seed's shards and everything else it ships, the claims deleting what they fire."""
    seed = DeployConfig.from_context(App(context=cli_context({"profile": "seed"})).node)
    moved = DeployConfig.from_context(
        App(context=cli_context({"profile": "seed", "dueCursor": "false"})).node
    )

    assert seed.tuning.due_cursor and not moved.tuning.due_cursor
    assert moved == replace(seed, tuning=replace(seed.tuning, due_cursor=False))
    doc = " ".join((Path(__file__).parents[2] / "docs" / "DEPLOY.md").read_text().split())
    assert "move a running `small` deployment with `-c profile=seed -c dueCursor=false`" in doc


def test_a_due_writer_whose_timeout_reaches_the_late_margin_is_refused() -> None:
    """The indexer's timeout raised to the late margin less a claim's reach and two clock
    margins is refused by name; a second less, or the cursor off, is not."""
    defaults = Settings.model_construct()
    late = defaults.due_late_margin_sec
    reach = max(defaults.dispatch_ahead_sec, defaults.burst_ahead_sec + 1)
    edge = int(late - reach - 2 * defaults.clock_margin_sec)
    config = _config("default")

    def indexer_timing_out_after(seconds: int) -> tuple[FunctionSpec, ...]:
        return tuple(replace(s, timeout_sec=seconds) if s is INDEXER else s for s in SPECS)

    with pytest.raises(
        ContextError,
        match=rf"'dueCursor=true' needs every due write committed within due_late_margin_sec "
        rf"\({late:g} s\), but the indexer function's timeout \({edge} s\)",
    ):
        check_due_cursor(config, indexer_timing_out_after(edge))
    check_due_cursor(config, indexer_timing_out_after(edge - 1))
    check_due_cursor(
        replace(config, tuning=replace(config.tuning, due_cursor=False)),
        indexer_timing_out_after(edge),
    )


def test_the_synth_refuses_the_cursor_when_a_due_writer_outlasts_the_late_margin(
    monkeypatch: pytest.MonkeyPatch, synth_context: Callable[..., dict[str, Any]]
) -> None:
    """The check runs as the functions are built: `cdk synth` fails before any template."""
    late = int(Settings.model_construct().due_late_margin_sec)
    monkeypatch.setattr(
        functions,
        "SPECS",
        tuple(replace(s, timeout_sec=late) if s is INDEXER else s for s in SPECS),
    )

    with pytest.raises(ContextError, match="the indexer function's timeout"):
        build(App(context=synth_context(fargateWorker=False)))
