"""docs/DEPLOY.md says what the app builds: its counts, every function's row, the reservations the
first-deploy checklist adds up, and the deploy policy's actions the templates need."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

from infra.functions import SPECS
from takt.resources import TABLES

DEPLOY = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md").read_text()


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
