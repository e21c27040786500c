"""Tenant isolation in the synthesized templates: the API never reaches the due index and never
scans, a tenant session is confined by dynamodb:LeadingKeys, and the jobs table's stream feeds
the indexer with retries and a watched failure queue."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra.functions import API, INDEXER, FunctionSpec
from infra.stateful import StatefulStack
from infra.stateless import StatelessStack
from infra.tenant_access import TENANT_TABLES
from infra.triggers import INDEXER_RETRIES
from takt.resources import DUE, JOBS, TABLES
from takt.store.quarantine import QUARANTINE_PARTITION

LogicalId = Callable[[Stack, IConstruct], str]


@pytest.fixture(scope="module")
def resources(stateless_template: Template) -> dict[str, Any]:
    found: dict[str, Any] = stateless_template.to_json()["Resources"]
    return found


def policy_statements(
    spec: FunctionSpec, stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> list[dict[str, Any]]:
    role = stateless.functions.functions[spec.name].role
    assert role is not None
    role_id = logical_id(stateless, role)
    return [
        statement
        for resource in resources.values()
        if resource["Type"] == "AWS::IAM::Policy"
        and {"Ref": role_id} in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def table_export(stateful: StatefulStack, logical_id: LogicalId, spec: Any) -> str:
    """The stateful stack's logical id of a table, as cross-stack references name it."""
    return logical_id(stateful, stateful.tables.table(spec))


def test_only_the_jobs_table_has_a_stream_with_both_images(stateful_template: Template) -> None:
    tables = stateful_template.find_resources("AWS::DynamoDB::Table")

    streams = {
        logical: props["Properties"].get("StreamSpecification") for logical, props in tables.items()
    }

    with_stream = {k: v for k, v in streams.items() if v}
    assert len(tables) == len(TABLES)
    assert list(with_stream.values()) == [{"StreamViewType": "NEW_AND_OLD_IMAGES"}]
    assert next(iter(with_stream)).startswith("Tables" + JOBS.logical_id)


def test_the_api_role_never_names_the_due_table(
    stateless: StatelessStack,
    stateful: StatefulStack,
    resources: dict[str, Any],
    logical_id: LogicalId,
) -> None:
    statements = json.dumps(policy_statements(API, stateless, resources, logical_id))

    assert table_export(stateful, logical_id, DUE) not in statements
    # Its statements are read (tables reached through the tenant session's role instead).
    assert logical_id(stateless, stateless.functions.tenant_data.role) in statements


def test_the_indexer_reads_the_jobs_stream_with_retries_bisection_and_a_failure_queue(
    stateless: StatelessStack,
    stateful: StatefulStack,
    resources: dict[str, Any],
    logical_id: LogicalId,
) -> None:
    indexer_id = logical_id(stateless, stateless.functions.indexer)
    [mapping] = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping"
        and r["Properties"]["FunctionName"] == {"Ref": indexer_id}
    ]

    assert table_export(stateful, logical_id, JOBS) in json.dumps(mapping["EventSourceArn"])
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == INDEXER_RETRIES
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    failure_queue = mapping["DestinationConfig"]["OnFailure"]["Destination"]
    assert "IndexFailures" in json.dumps(failure_queue)


def test_the_indexer_writes_only_the_due_table(
    stateless: StatelessStack,
    stateful: StatefulStack,
    resources: dict[str, Any],
    logical_id: LogicalId,
) -> None:
    statements = json.dumps(policy_statements(INDEXER, stateless, resources, logical_id))

    written = [spec for spec in TABLES if table_export(stateful, logical_id, spec) in statements]
    # The jobs table appears only through its stream's ARN (read by the event source).
    assert DUE in written
    assert "dynamodb:PutItem" in statements
    assert "dynamodb:GetRecords" in statements


def test_the_failure_queue_and_the_indexers_lag_are_alarmed(resources: dict[str, Any]) -> None:
    alarms = {
        logical: r["Properties"]
        for logical, r in resources.items()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    }

    [failures] = [a for logical, a in alarms.items() if "IndexFailures" in logical]
    [age] = [a for logical, a in alarms.items() if "IndexerIteratorAge" in logical]
    assert failures["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert (failures["Threshold"], failures["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    assert age["MetricName"] == "IteratorAge"
    assert failures["AlarmActions"] and age["AlarmActions"]


def test_the_api_role_reaches_no_table_but_through_a_tenants_session(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    statements = policy_statements(API, stateless, resources, logical_id)
    tenant_data = logical_id(stateless, stateless.functions.tenant_data.role)

    data = [s for s in statements if any(a.startswith("dynamodb:") for a in _actions(s))]
    # One exception: the quarantine partition of the tenants table (admin routes, no tenant's).
    [quarantine] = data
    assert quarantine["Condition"] == {
        "ForAllValues:StringLike": {
            "dynamodb:LeadingKeys": [QUARANTINE_PARTITION, f"{QUARANTINE_PARTITION}#*"]
        }
    }
    assert "Tenants" in json.dumps(quarantine["Resource"])
    assert "dynamodb:Scan" not in _actions(quarantine)
    assume = [s for s in statements if "sts:AssumeRole" in _actions(s)]
    assert assume and all(tenant_data in json.dumps(s["Resource"]) for s in assume)


def test_the_api_function_is_told_its_tenant_data_role(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    function = resources[logical_id(stateless, stateless.functions.api)]["Properties"]
    role_arn = function["Environment"]["Variables"]["TAKT_TENANT_DATA_ROLE_ARN"]

    assert role_arn == {
        "Fn::GetAtt": [logical_id(stateless, stateless.functions.tenant_data.role), "Arn"]
    }


def test_the_tenant_data_role_is_confined_to_the_session_tenants_leading_keys(
    stateless: StatelessStack,
    stateful: StatefulStack,
    resources: dict[str, Any],
    logical_id: LogicalId,
) -> None:
    role_id = logical_id(stateless, stateless.functions.tenant_data.role)
    statements = [
        statement
        for resource in resources.values()
        if resource["Type"] == "AWS::IAM::Policy"
        and {"Ref": role_id} in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]

    assert statements
    for statement in statements:
        assert "dynamodb:Scan" not in _actions(statement)
        assert statement["Condition"] == {
            "ForAllValues:StringLike": {
                "dynamodb:LeadingKeys": [
                    "${aws:PrincipalTag/tenant}",
                    "${aws:PrincipalTag/tenant}#*",
                ]
            }
        }
    named = json.dumps(statements)
    assert all(table_export(stateful, logical_id, t) in named for t in TENANT_TABLES)
    assert table_export(stateful, logical_id, DUE) not in named


def test_only_the_api_may_open_a_tenant_session_and_only_with_a_tenant_tag(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    role = resources[logical_id(stateless, stateless.functions.tenant_data.role)]["Properties"]
    api_role_id = logical_id(stateless, stateless.functions.api.role)  # type: ignore[arg-type]

    trust = role["AssumeRolePolicyDocument"]["Statement"]

    assert {a for s in trust for a in _actions(s)} == {"sts:AssumeRole", "sts:TagSession"}
    assert all(api_role_id in json.dumps(s["Principal"]) for s in trust)
    assert all(s["Condition"] == {"StringLike": {"aws:RequestTag/tenant": "?*"}} for s in trust)


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)
