"""docs/DEPLOY.md says what the app builds: its counts, every function's row, the reservations the
first-deploy checklist adds up, and the deploy policy's actions the templates need."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.deploy_check import MIN_UNRESERVED, DictContext, plan
from infra.functions import SPECS, FunctionSpec
from infra.stateless import StatelessStack
from takt.resources import TABLES
from tests.infra.conftest import LogicalId

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = (ROOT / "docs" / "DEPLOY.md").read_text()
README = (ROOT / "README.md").read_text()


def test_the_stacks_table_counts_the_tables_and_functions() -> None:
    assert f"the {len(TABLES)} DynamoDB tables" in DEPLOY
    assert f"the {len(SPECS)} functions" in DEPLOY
    assert f"All {len(SPECS)} run Python" in DEPLOY


def test_every_function_has_a_row_in_the_permissions_table() -> None:
    rows = [line for line in DEPLOY.splitlines() if line.startswith("| `")]

    assert all(any(row.startswith(f"| `{spec.name}` |") for row in rows) for spec in SPECS)


def _reserved(template: Template) -> int:
    functions = template.find_resources("AWS::Lambda::Function").values()
    return sum(int(f["Properties"].get("ReservedConcurrentExecutions", 0)) for f in functions)


def test_the_checklist_adds_up_the_shipped_reservations(stateless_template: Template) -> None:
    assert f"{_reserved(stateless_template)} as\n   shipped" in DEPLOY


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_prerequisites_quota_is_deploy_checks_for_each_profile(
    cdk_json_context: dict[str, Any], stateless_template: Template
) -> None:
    """The quota a new user asks for is the one `takt deploy check` wants: the reservations the
    template sets, plus what Lambda keeps unreserved."""
    seed = plan(DictContext(cdk_json_context))
    small = plan(DictContext({"profile": "small"}))
    prerequisites = _flat(
        DEPLOY[DEPLOY.index("## Prerequisites") : DEPLOY.index("## First-deploy")]
    )

    assert seed.reserved_total == _reserved(stateless_template)
    assert (
        f"quota of at least {seed.reserved_total + MIN_UNRESERVED} for the shipped profile, or "
        f"{small.reserved_total + MIN_UNRESERVED} with `-c profile=small`" in prerequisites
    )
    reserved = seed.reserved
    assert (
        f"reserve {seed.reserved_total} (scheduler {reserved['scheduler']}, watchdog "
        f"{reserved['watchdog']}, claimer {reserved['claimer']}) or {small.reserved_total}"
        in prerequisites
    )
    assert f"Lambda keeps {MIN_UNRESERVED} of the quota unreserved" in prerequisites


def test_the_readmes_deploy_steps_up_to_synth_are_what_the_cli_synth_test_runs() -> None:
    """tests/infra/test_infra_cli_synth.py runs `npx cdk synth` with a user's PATH after these."""
    section = README[README.index("## Deploy to AWS") :]
    block = section[section.index("```bash") + len("```bash") : section.index("```\n", 8)]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]

    assert commands[:2] == ["make install && npm ci", "npx cdk synth"]


def test_the_checklist_adds_up_the_lanes_concurrency(cdk_json_context: dict[str, Any]) -> None:
    lanes = cdk_json_context["lanes"]
    total = sum(lane["maxConcurrency"] for lane in lanes.values())

    assert f"`maxConcurrency` ({total} as shipped" in DEPLOY


def test_the_deploy_policy_covers_access_logs_and_stack_outputs(
    stateless_template: Template,
) -> None:
    """HTTP API access logs need log deliveries; Fn::GetStackOutput needs DescribeStacks."""
    stages = stateless_template.find_resources("AWS::ApiGatewayV2::Stage").values()
    body = json.dumps(stateless_template.to_json())

    assert any("AccessLogSettings" in stage["Properties"] for stage in stages)
    assert "Fn::GetStackOutput" in body
    for action in ("CreateLogDelivery", "PutResourcePolicy", "DescribeResourcePolicies"):
        assert f"`{action}`" in DEPLOY
    assert (
        "`DescribeStacks` on `arn:aws:cloudformation:<region>:<account>:stack/TaktStateful/*`"
        in DEPLOY
    )


def _policy_targets(resources: dict[str, Any], role_id: str) -> tuple[set[str], set[str]]:
    """The tables a role's policies reach, and the roles it may assume."""
    tables: set[str] = set()
    assumes: set[str] = set()
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        if {"Ref": role_id} not in resource["Properties"]["Roles"]:
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            reached = json.dumps(statement["Resource"])
            tables |= {
                table.logical_id.lower()
                for table in TABLES
                if re.search(rf"Tables{table.logical_id}[0-9A-F]{{8}}", reached)
            }
            if "sts:AssumeRole" in statement["Action"]:
                assumes |= set(re.findall(r'"(\w+Role[0-9A-F]{8})"', reached))
    return tables, assumes


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_the_permissions_table_names_the_tables_each_function_reaches(
    spec: FunctionSpec,
    stateless: StatelessStack,
    stateless_template: Template,
    logical_id: LogicalId,
) -> None:
    """Directly, or through a role it assumes (the API's per-tenant sessions)."""
    resources: dict[str, Any] = stateless_template.to_json()["Resources"]
    function = resources[logical_id(stateless, stateless.functions.functions[spec.name])]
    tables, assumes = _policy_targets(resources, function["Properties"]["Role"]["Fn::GetAtt"][0])
    for role_id in assumes:
        tables |= _policy_targets(resources, role_id)[0]
    (row,) = [line for line in DEPLOY.splitlines() if line.startswith(f"| `{spec.name}` |")]
    may_use = row.rsplit("|", 2)[1]

    assert tables
    assert {
        table.logical_id.lower()
        for table in TABLES
        if re.search(rf"\b{table.logical_id.lower()}\b", may_use)
    } == tables
