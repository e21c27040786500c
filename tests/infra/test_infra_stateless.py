"""The stateless stack: functions wired to the right data with least privilege, driven by the
right triggers, and fronted by an authenticated, throttled, logged HTTP API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra.functions import (
    SCHEDULER,
    SPECS,
    WORKER,
    WORKER_TIMEOUT_SEC,
    FunctionSpec,
    table_env_var,
)
from infra.stateful import StatefulStack
from infra.stateless import StatelessStack
from takt.config import LANES
from takt.resources import EXECUTIONS, QUEUES, TABLES

LogicalId = Callable[[Stack, IConstruct], str]
Resolve = Callable[[Any], Any]


@pytest.fixture(scope="module")
def resources(stateless_template: Template) -> dict[str, Any]:
    found: dict[str, Any] = stateless_template.to_json()["Resources"]
    return found


def _function(
    spec: FunctionSpec, stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> dict[str, Any]:
    properties: dict[str, Any] = resources[
        logical_id(stateless, stateless.functions.functions[spec.name])
    ]["Properties"]
    return properties


def _policy_statements(
    spec: FunctionSpec, stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> list[dict[str, Any]]:
    role = stateless.functions.functions[spec.name].role
    assert role is not None
    role_id = logical_id(stateless, role)
    statements: list[dict[str, Any]] = []
    for resource in resources.values():
        properties = resource["Properties"]
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in properties["Roles"]:
            statements += properties["PolicyDocument"]["Statement"]
    return statements


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def test_lane_visibility_timeout_is_at_least_six_worker_timeouts(
    stateful_template: Template,
    stateless: StatelessStack,
    resources: dict[str, Any],
    logical_id: LogicalId,
) -> None:
    worker = _function(WORKER, stateless, resources, logical_id)
    queues = stateful_template.find_resources("AWS::SQS::Queue")
    lanes = [q["Properties"] for q in queues.values() if "RedrivePolicy" in q["Properties"]]

    assert worker["Timeout"] == WORKER_TIMEOUT_SEC
    assert len(lanes) == len(QUEUES)
    assert all(lane["VisibilityTimeout"] >= 6 * worker["Timeout"] for lane in lanes)


@pytest.mark.parametrize("lane", LANES)
def test_worker_consumes_each_lane_reporting_partial_batch_failures(
    lane: str,
    stateful: StatefulStack,
    stateless: StatelessStack,
    resources: dict[str, Any],
    resolve: Resolve,
    logical_id: LogicalId,
    cdk_json_context: dict[str, Any],
) -> None:
    queue_id = logical_id(stateful, stateful.lanes.lanes[lane].queue)
    worker_id = logical_id(stateless, stateless.functions.worker)
    mappings = [
        resource["Properties"]
        for resource in resources.values()
        if resource["Type"] == "AWS::Lambda::EventSourceMapping"
        and resolve(resource["Properties"]["EventSourceArn"]) == {"Fn::GetAtt": [queue_id, "Arn"]}
    ]
    tuning = cdk_json_context["lanes"][lane]

    assert len(mappings) == 1
    assert mappings[0]["FunctionName"] == {"Ref": worker_id}
    assert mappings[0]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mappings[0]["BatchSize"] == 10
    assert mappings[0]["MaximumBatchingWindowInSeconds"] == tuning["batchingWindowSec"]
    assert mappings[0]["ScalingConfig"] == {"MaximumConcurrency": tuning["maxConcurrency"]}


def test_http_api_routes_everything_to_the_api_function_with_iam_auth(
    stateless_template: Template, stateless: StatelessStack, logical_id: LogicalId
) -> None:
    routes = stateless_template.find_resources("AWS::ApiGatewayV2::Route")

    assert sorted(route["Properties"]["RouteKey"] for route in routes.values()) == [
        "ANY /",
        "ANY /{proxy+}",
    ]
    assert all(route["Properties"]["AuthorizationType"] == "AWS_IAM" for route in routes.values())
    stateless_template.has_resource_properties(
        "AWS::ApiGatewayV2::Integration",
        {
            "IntegrationType": "AWS_PROXY",
            "PayloadFormatVersion": "2.0",
            "IntegrationUri": {
                "Fn::GetAtt": [logical_id(stateless, stateless.functions.api), "Arn"]
            },
        },
    )


def test_http_api_stage_throttles_and_writes_access_logs(
    stateless_template: Template, cdk_json_context: dict[str, Any]
) -> None:
    stages = stateless_template.find_resources("AWS::ApiGatewayV2::Stage")
    (stage,) = (resource["Properties"] for resource in stages.values())

    assert stage["StageName"] == "$default"
    assert stage["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": cdk_json_context["apiRateLimit"],
        "ThrottlingBurstLimit": cdk_json_context["apiBurstLimit"],
    }
    assert "$context.requestId" in json.loads(stage["AccessLogSettings"]["Format"]).values()
    assert "Fn::GetAtt" in stage["AccessLogSettings"]["DestinationArn"]


@pytest.mark.parametrize("name", ["scheduler", "watchdog"])
def test_loop_function_runs_every_minute_without_piling_up(
    name: str,
    stateless: StatelessStack,
    stateless_template: Template,
    resources: dict[str, Any],
    logical_id: LogicalId,
) -> None:
    function_id = logical_id(stateless, stateless.functions.functions[name])
    rules = [
        resource["Properties"]
        for resource in resources.values()
        if resource["Type"] == "AWS::Events::Rule"
        and resource["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    function = resources[function_id]["Properties"]

    assert [rule["ScheduleExpression"] for rule in rules] == ["rate(1 minute)"]
    assert function["Timeout"] == 70
    assert function["ReservedConcurrentExecutions"] == 2
    stateless_template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {"FunctionName": {"Ref": function_id}, "MaximumRetryAttempts": 0},
    )


def test_scheduler_may_invoke_the_claimer_and_knows_its_name(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    scheduler = SCHEDULER
    claimer_id = logical_id(stateless, stateless.functions.claimer)
    invokes = [
        statement
        for statement in _policy_statements(scheduler, stateless, resources, logical_id)
        if "lambda:InvokeFunction" in _actions(statement)
    ]
    variables = _function(scheduler, stateless, resources, logical_id)["Environment"]["Variables"]

    assert len(invokes) == 1
    assert {"Fn::GetAtt": [claimer_id, "Arn"]} in invokes[0]["Resource"]
    assert variables["TAKT_CLAIMER_MODE"] == "lambda"
    assert variables["TAKT_CLAIMER_FUNCTION"] == {"Ref": claimer_id}


@pytest.mark.parametrize("template_name", ["stateful_template", "stateless_template"])
def test_no_iam_statement_allows_a_wildcard_action(
    template_name: str, request: pytest.FixtureRequest
) -> None:
    template: Template = request.getfixturevalue(template_name)
    policies = template.find_resources("AWS::IAM::Policy")
    actions = [
        action
        for policy in policies.values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Allow"
        for action in _actions(statement)
    ]

    assert not [action for action in actions if "*" in action]


def test_roles_carry_no_managed_policies(stateless_template: Template) -> None:
    roles = stateless_template.find_resources("AWS::IAM::Role")

    assert roles
    assert all("ManagedPolicyArns" not in role["Properties"] for role in roles.values())


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_function_reaches_only_its_tables_and_lanes(
    spec: FunctionSpec,
    stateful: StatefulStack,
    stateless: StatelessStack,
    resources: dict[str, Any],
    resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    statements = _policy_statements(spec, stateless, resources, logical_id)
    table_ids = {
        logical_id(stateful, stateful.tables.table(table_spec)): table_spec for table_spec in TABLES
    }
    queue_ids = {logical_id(stateful, lane.queue) for lane in stateful.lanes.lanes.values()}
    reached_tables = set()
    reached_queues = set()
    writes_to = set()
    for statement in statements:
        targets = resolve(statement["Resource"])
        text = json.dumps(targets)
        for table_id, table_spec in table_ids.items():
            if f'"{table_id}"' in text:
                reached_tables.add(table_spec)
                if "dynamodb:PutItem" in _actions(statement):
                    writes_to.add(table_spec)
        reached_queues |= {queue_id for queue_id in queue_ids if f'"{queue_id}"' in text}

    assert reached_tables == set(spec.tables)
    assert writes_to == {table for table, access in spec.tables.items() if access == "read_write"}
    assert reached_queues == (queue_ids if spec.sends_to_lanes else set())


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_function_environment_names_every_table_and_lane(
    spec: FunctionSpec,
    stateful: StatefulStack,
    stateless: StatelessStack,
    resources: dict[str, Any],
    resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    variables = resolve(
        _function(spec, stateless, resources, logical_id)["Environment"]["Variables"]
    )
    separator, parts = variables["TAKT_LANE_URLS"]["Fn::Join"]
    lane_urls = json.loads(
        separator.join(part if isinstance(part, str) else part["Ref"] for part in parts)
    )

    for table_spec in TABLES:
        table_id = logical_id(stateful, stateful.tables.table(table_spec))
        assert variables[table_env_var(table_spec)] == {"Ref": table_id}
    assert lane_urls == {
        lane: logical_id(stateful, pair.queue) for lane, pair in stateful.lanes.lanes.items()
    }
    assert variables["TAKT_REGION"] == {"Ref": "AWS::Region"}
    assert variables["POWERTOOLS_SERVICE_NAME"] == "takt"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "takt"
    assert variables["LOG_LEVEL"] == "INFO"


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_function_runs_python_3_13_on_graviton_with_the_layer_and_tracing(
    spec: FunctionSpec, stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    function = _function(spec, stateless, resources, logical_id)
    layers = [r for r in resources.values() if r["Type"] == "AWS::Lambda::LayerVersion"]

    assert function["Runtime"] == "python3.13"
    assert function["Architectures"] == ["arm64"]
    assert function["Handler"] == "handler.handler"
    assert function["TracingConfig"] == {"Mode": "Active"}
    assert "FunctionName" not in function
    assert len(function["Layers"]) == 1
    assert len(layers) == 1
    assert layers[0]["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layers[0]["Properties"]["CompatibleRuntimes"] == ["python3.13"]


def test_only_the_executions_table_grants_reach_an_index(
    stateful: StatefulStack,
    stateless: StatelessStack,
    resources: dict[str, Any],
    resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    executions_id = logical_id(stateful, stateful.tables.table(EXECUTIONS))
    index_targets = {
        json.dumps(resolve(target))
        for spec in SPECS
        for statement in _policy_statements(spec, stateless, resources, logical_id)
        for target in (
            statement["Resource"]
            if isinstance(statement["Resource"], list)
            else [statement["Resource"]]
        )
        if "/index/*" in json.dumps(target)
    }

    assert index_targets
    assert all(executions_id in target for target in index_targets)
