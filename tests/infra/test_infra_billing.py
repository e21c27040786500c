"""The seed's provisioned tables: every table and index provisioned with target tracking, as the
CDK CLI synthesizes it (a concrete account and region), with room for the seed's burst where
the watchdog raises it; `-c tableBilling=onDemand` (and the other profiles) on demand."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infra.context import ContextError, DeployConfig
from infra.tables import Capacity, capacity_names
from takt.resources import TABLES
from takt_cli.capacity.billing import TABLES as PRICED_TABLES
from takt_cli.capacity.idle import render, table_capacity_lines
from tests.infra.cli_synth import ROOT
from tests.infra.conftest import cdk_context

DEPLOY_DOC = ROOT / "docs" / "DEPLOY.md"


def _stateful(assembly: Path) -> dict[str, Any]:
    template: dict[str, Any] = json.loads((assembly / "TaktStateful.template.json").read_text())
    resources: dict[str, Any] = template["Resources"]
    return resources


def _of_type(resources: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in resources.values() if r["Type"] == kind]


class _Node:
    def __init__(self, context: dict[str, Any]) -> None:
        self.context = context

    def try_get_context(self, key: str) -> Any:
        return self.context.get(key)


def _config(**overrides: Any) -> DeployConfig:
    return DeployConfig.from_context(_Node(cdk_context(**overrides)))


def test_the_on_demand_setting_has_no_capacity_to_scale(
    cli_assemblies: Callable[[str], Path],
) -> None:
    resources = _stateful(cli_assemblies("on-demand"))
    tables = _of_type(resources, "AWS::DynamoDB::Table")

    assert len(tables) == len(TABLES)
    assert {t["BillingMode"] for t in tables} == {"PAY_PER_REQUEST"}
    assert not _of_type(resources, "AWS::ApplicationAutoScaling::ScalableTarget")


# What the seed profile lets auto scaling and the watchdog's step reach where the burst needs
# more than the per-table quota's 40,000 (cli/takt_cli/profiles.json, `tableCapacity`).
SEED_BURST_MAXIMUMS = {
    ("executions", "dynamodb:table:WriteCapacityUnits"): 80000,
    ("jobs", "dynamodb:table:ReadCapacityUnits"): 80000,
    ("due", "dynamodb:table:WriteCapacityUnits"): 60000,
}


def test_the_shipped_tables_are_provisioned_each_way_with_room_for_the_seeds_burst(
    cli_assemblies: Callable[[str], Path],
) -> None:
    resources = _stateful(cli_assemblies("default"))
    tables = _of_type(resources, "AWS::DynamoDB::Table")
    targets = _of_type(resources, "AWS::ApplicationAutoScaling::ScalableTarget")
    policies = _of_type(resources, "AWS::ApplicationAutoScaling::ScalingPolicy")

    assert all("BillingMode" not in t or t["BillingMode"] == "PROVISIONED" for t in tables)
    assert all("ProvisionedThroughput" in t for t in tables)
    indexes = [i for t in tables for i in t.get("GlobalSecondaryIndexes", [])]
    assert all("ProvisionedThroughput" in i for i in indexes)
    # A target and a policy for reads and for writes, for every table and every index.
    assert len(targets) == len(policies) == 2 * len(capacity_names())
    dimensions = {t["ScalableDimension"] for t in targets}
    assert dimensions == {
        "dynamodb:table:WriteCapacityUnits",
        "dynamodb:table:ReadCapacityUnits",
        "dynamodb:index:WriteCapacityUnits",
        "dynamodb:index:ReadCapacityUnits",
    }
    assert {p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] for p in policies} == {70}
    # Every table and index starts at the app's minimum, but for the due table's reads and the
    # `open` index's, which serve the idle loops (tests/infra/test_infra_cost.py): the watchdog
    # raises what a minute needs.
    assert sorted(t["MinCapacity"] for t in targets) == sorted([5] * (len(targets) - 2) + [10, 220])
    assert sorted(t["MaxCapacity"] for t in targets) == sorted(
        [40000] * (len(targets) - len(SEED_BURST_MAXIMUMS)) + list(SEED_BURST_MAXIMUMS.values())
    )
    by_table = {
        (spec.logical_id.lower(), t["ScalableDimension"]): t["MaxCapacity"]
        for t in targets
        for spec in TABLES
        if f"Tables{spec.logical_id}" in json.dumps(t["ResourceId"])
        and t["ScalableDimension"].startswith("dynamodb:table:")
    }
    for key, most in SEED_BURST_MAXIMUMS.items():
        assert by_table[key] == most, f"{key} may reach the seed's burst"


def test_the_cost_model_prices_every_table_and_index_the_app_creates() -> None:
    assert set(PRICED_TABLES) == set(capacity_names())


def test_a_table_not_named_gets_the_default_range() -> None:
    billing = _config(tableBilling="provisioned").table_billing

    assert billing is not None and billing.target_utilization == 70
    assert billing.of("tenants") == Capacity()


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"tableBilling": "reserved"}, "tableBilling"),
        ({"tableBilling": "provisioned", "tableTargetUtilization": "95"}, "tableTargetUtilization"),
        (
            {"tableBilling": "provisioned", "tableCapacity": '{"history": {}}'},
            "tableCapacity.history",
        ),
        (
            {"tableBilling": "provisioned", "tableCapacity": '{"jobs": {"write": [10, 5]}}'},
            "tableCapacity.jobs.write[1]",
        ),
        (
            {"tableBilling": "provisioned", "tableCapacity": '{"jobs": {"write": 10}}'},
            "tableCapacity.jobs.write",
        ),
        ({"tableBilling": "provisioned", "tableCapacity": "[1]"}, "tableCapacity"),
    ],
)
def test_a_bad_billing_setting_fails_the_synth_naming_it(
    overrides: dict[str, str], named: str
) -> None:
    with pytest.raises(ContextError, match=re.escape(f"'{named}'")):
        _config(**overrides)


def test_the_deploy_doc_shows_what_the_seed_capacity_holds_every_hour(
    cli_assemblies: Callable[[str], Path],
) -> None:
    provisioned = {"Resources": _stateful(cli_assemblies("default"))}
    on_demand = {"Resources": _stateful(cli_assemblies("on-demand"))}

    assert table_capacity_lines(on_demand) == []
    assert render(table_capacity_lines(provisioned)) in DEPLOY_DOC.read_text()


def _stateless(assembly: Path) -> dict[str, Any]:
    template: dict[str, Any] = json.loads((assembly / "TaktStateless.template.json").read_text())
    resources: dict[str, Any] = template["Resources"]
    return resources


def _watchdog(resources: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return next(
        (logical_id, r["Properties"])
        for logical_id, r in resources.items()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Description", "").startswith("takt watchdog")
    )


def _statements(resources: dict[str, Any], role_arn: dict[str, Any]) -> list[dict[str, Any]]:
    """The statements of the policies attached to the role whose `Fn::GetAtt` ARN is given."""
    role_ref = {"Ref": role_arn["Fn::GetAtt"][0]}
    return [
        statement
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy" and role_ref in r["Properties"]["Roles"]
        for statement in r["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_provisioned_tables_are_raised_ahead_by_the_watchdog_on_their_own_targets_only(
    cli_assemblies: Callable[[str], Path],
) -> None:
    """The watchdog's table step (takt.dispatch.ahead.TableScaleAhead) gets each table's floors
    and may register only the three tables' write and read targets, tagged with their resource
    ids, and lower only those three tables' capacity."""
    stateful = _stateful(cli_assemblies("default"))
    stateless = _stateless(cli_assemblies("default"))
    _, watchdog = _watchdog(stateless)
    env = watchdog["Environment"]["Variables"]

    assert json.loads(env["TAKT_TABLE_WRITE_FLOORS"]) == {"executions": 5, "jobs": 5, "due": 5}, (
        "each table falls back to its profile's write minimum"
    )
    assert json.loads(env["TAKT_TABLE_READ_FLOORS"]) == {"executions": 5, "jobs": 5, "due": 220}, (
        "... and to its read minimum (the due table's serves the scheduler's probes)"
    )
    assert (env["TAKT_SCALE_AHEAD_MINUTES"], env["TAKT_TABLE_TARGET_UTILIZATION"]) == ("5", "70")
    tagged = [
        t
        for t in _of_type(stateful, "AWS::ApplicationAutoScaling::ScalableTarget")
        if t["ScalableDimension"].startswith("dynamodb:table:")
    ]
    assert len(tagged) == 2 * len(TABLES) and all(
        any(tag["Key"] == "takt:scaled-table" for tag in t.get("Tags", [])) for t in tagged
    ), "every table's write and read target carries the tag the watchdog's grant is conditional on"
    statements = _statements(stateless, watchdog["Role"])
    # The seed ships the Fargate worker too: its service's target has a statement of its own.
    (register,) = [
        s
        for s in statements
        if s["Action"] == "application-autoscaling:RegisterScalableTarget"
        and s["Condition"]["StringEquals"]["application-autoscaling:service-namespace"]
        == "dynamodb"
    ]
    condition = register["Condition"]["StringEquals"]
    assert sorted(condition["application-autoscaling:scalable-dimension"]) == [
        "dynamodb:table:ReadCapacityUnits",
        "dynamodb:table:WriteCapacityUnits",
    ]
    assert len(condition["aws:ResourceTag/takt:scaled-table"]) == 3, (
        "only the executions, jobs and due tables' targets"
    )
    (update,) = [s for s in statements if "dynamodb:UpdateTable" in s["Action"]]
    assert len(update["Resource"]) == 3, "the step lowers only the three tables it raised"


def test_on_demand_tables_give_the_watchdog_no_table_step(
    cli_assemblies: Callable[[str], Path],
) -> None:
    _, watchdog = _watchdog(_stateless(cli_assemblies("on-demand")))

    assert "TAKT_TABLE_WRITE_FLOORS" not in watchdog["Environment"]["Variables"]
