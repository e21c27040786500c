"""`-c tableBilling=provisioned`: every table and index provisioned with target tracking, as the
CDK CLI synthesizes it (a concrete account and region); on demand stays the default."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from infra.context import ContextError, DeployConfig
from infra.tables import Capacity, capacity_names
from takt.resources import TABLES
from takt_cli.capacity.billing import TABLES as PRICED_TABLES
from takt_cli.capacity.billing import steady_capacity, table_loads
from takt_cli.capacity.idle import render, table_capacity_lines
from takt_cli.capacity.model import CallProfile
from takt_cli.capacity.profiles import load_profile
from tests.infra.cli_synth import ROOT, SEED_TABLE_CAPACITY
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


def test_the_shipped_tables_are_on_demand(cli_assemblies: Callable[[str], Path]) -> None:
    tables = _of_type(_stateful(cli_assemblies("default")), "AWS::DynamoDB::Table")

    assert len(tables) == len(TABLES)
    assert {t["BillingMode"] for t in tables} == {"PAY_PER_REQUEST"}
    assert not _of_type(
        _stateful(cli_assemblies("default")), "AWS::ApplicationAutoScaling::ScalableTarget"
    )


def test_provisioned_tables_scale_every_table_and_index_each_way(
    cli_assemblies: Callable[[str], Path],
) -> None:
    resources = _stateful(cli_assemblies("provisioned"))
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
    # The executions table's writes start at the seed's steady capacity from tableCapacity.
    writes = [
        t
        for t in targets
        if t["ScalableDimension"] == "dynamodb:table:WriteCapacityUnits"
        and t["MinCapacity"] == 6000
    ]
    assert len(writes) == 1 and writes[0]["MaxCapacity"] == 40000
    executions = next(
        t for t in tables if any(k["AttributeName"] == "job_key" for k in t["KeySchema"])
    )
    assert executions["ProvisionedThroughput"]["WriteCapacityUnits"] == 6000
    # A claim's executions stay out of the `open` index: it keeps the app's default minimum.
    open_index = next(i for i in executions["GlobalSecondaryIndexes"] if i["IndexName"] == "open")
    assert open_index["ProvisionedThroughput"]["WriteCapacityUnits"] == 5


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


def test_the_documented_seed_capacity_is_the_cost_models_steady_capacity() -> None:
    # The seed's 10 s jobs under its lease (45 s renewed every 15 s: none renews it).
    calls = load_profile("seed").timed(replace(CallProfile(), target_latency_ms=10_000))
    tables = table_loads(calls.write_units_by_table, calls.read_units_by_table)

    assert json.loads(SEED_TABLE_CAPACITY) == steady_capacity(tables, 1400)
    assert f"-c tableCapacity='{SEED_TABLE_CAPACITY}'" in DEPLOY_DOC.read_text()


def test_the_deploy_doc_shows_what_the_seed_capacity_holds_every_hour(
    cli_assemblies: Callable[[str], Path],
) -> None:
    provisioned = {"Resources": _stateful(cli_assemblies("provisioned"))}
    on_demand = {"Resources": _stateful(cli_assemblies("default"))}

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
    """The watchdog's table step (takt.dispatch.ahead.TableScaleAhead) gets each table's floor
    and may register only the three tables' write targets, tagged with their resource ids."""
    stateful = _stateful(cli_assemblies("provisioned"))
    stateless = _stateless(cli_assemblies("provisioned"))
    _, watchdog = _watchdog(stateless)
    env = watchdog["Environment"]["Variables"]

    assert json.loads(env["TAKT_TABLE_WRITE_FLOORS"]) == {
        "executions": 6000,
        "jobs": 2400,
        "due": 4000,
    }, "each table falls back to its profile's write minimum"
    assert (env["TAKT_SCALE_AHEAD_MINUTES"], env["TAKT_TABLE_TARGET_UTILIZATION"]) == ("5", "70")
    tagged = [
        t
        for t in _of_type(stateful, "AWS::ApplicationAutoScaling::ScalableTarget")
        if t["ScalableDimension"] == "dynamodb:table:WriteCapacityUnits"
    ]
    assert all(
        any(tag["Key"] == "takt:scaled-table" for tag in t.get("Tags", [])) for t in tagged
    ), "every table's write target carries the tag the watchdog's grant is conditional on"
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
    assert condition["application-autoscaling:scalable-dimension"] == (
        "dynamodb:table:WriteCapacityUnits"
    )
    assert len(condition["aws:ResourceTag/takt:scaled-table"]) == 3, (
        "only the executions, jobs and due tables' write targets"
    )
    (describe,) = [s for s in statements if "dynamodb:UpdateTable" in s["Action"]]
    assert len(describe["Resource"]) == 3


def test_on_demand_tables_give_the_watchdog_no_table_step(
    cli_assemblies: Callable[[str], Path],
) -> None:
    _, watchdog = _watchdog(_stateless(cli_assemblies("default")))

    assert "TAKT_TABLE_WRITE_FLOORS" not in watchdog["Environment"]["Variables"]
