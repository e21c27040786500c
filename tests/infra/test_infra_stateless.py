"""The stateless stack: functions wired to the right data with least privilege, driven by the
right triggers, and fronted by an authenticated, throttled, logged HTTP API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra.context import PROFILES, DeployConfig
from infra.driver import DRIVER_CONCURRENCY, DRIVER_TIMEOUT_SEC
from infra.functions import (
    API,
    SCHEDULER,
    SPECS,
    WORKER,
    WORKER_TIMEOUT_SEC,
    FunctionSpec,
    table_env_var,
)
from infra.stateful import StatefulStack
from infra.stateless import StatelessStack
from takt.config import LANES, Settings
from takt.resources import EXECUTIONS, JOBS, QUEUES, TABLES
from takt.store.quarantine import QUARANTINE_PARTITION

LogicalId = Callable[[Stack, IConstruct], str]
STREAM_ACTIONS = {
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
}
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
    assert mappings[0]["BatchSize"] == tuning.get("batchSize", 10)
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


@pytest.mark.parametrize(
    ("name", "timeout", "concurrency"),
    [("scheduler", DRIVER_TIMEOUT_SEC, DRIVER_CONCURRENCY), ("watchdog", 70, 2)],
)
def test_loop_function_runs_every_minute_without_piling_up(
    name: str,
    timeout: int,
    concurrency: int,
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
    assert function["Timeout"] == timeout
    assert function["ReservedConcurrentExecutions"] == concurrency
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


@pytest.mark.parametrize(
    "template_name", ["stateful_template", "stateless_template", "fargate_template"]
)
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


def test_with_the_fargate_worker_only_cdks_default_sg_lockdown_has_a_managed_policy(
    fargate_template: Template,
) -> None:
    """CDK's custom resource that strips the VPC's default security group of its rules runs at
    deploy time with AWSLambdaBasicExecutionRole (logs only); no takt role has one."""
    managed = {
        logical_id: role["Properties"]["ManagedPolicyArns"]
        for logical_id, role in fargate_template.find_resources("AWS::IAM::Role").items()
        if "ManagedPolicyArns" in role["Properties"]
    }

    (provider,) = managed

    assert provider.startswith("CustomVpcRestrictDefaultSGCustomResourceProvider")
    basic_execution = (
        "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
    )
    assert managed[provider] == [{"Fn::Sub": basic_execution}]


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
        if set(_actions(statement)) <= STREAM_ACTIONS:
            continue  # the indexer's event source reads the jobs table's stream, not the table
        if QUARANTINE_PARTITION in json.dumps(statement.get("Condition", {})):
            continue  # the API's quarantine partition alone (tests/infra/test_infra_access.py)
        targets = resolve(statement["Resource"])
        text = json.dumps(targets)
        for table_id, table_spec in table_ids.items():
            if f'"{table_id}"' in text:
                reached_tables.add(table_spec)
                if "dynamodb:PutItem" in _actions(statement):
                    writes_to.add(table_spec)
        reached_queues |= {queue_id for queue_id in queue_ids if f'"{queue_id}"' in text}

    # "tenant" tables are reached through the request tenant's session of TenantDataRole, never
    # by the function's own role (tests/infra/test_infra_access.py).
    own = {table: access for table, access in spec.tables.items() if access != "tenant"}
    assert reached_tables == set(own)
    assert writes_to == {table for table, access in own.items() if access == "read_write"}
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


def test_only_the_indexed_tables_grants_reach_an_index(
    stateful: StatefulStack,
    stateless: StatelessStack,
    resources: dict[str, Any],
    resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    # The executions table's `open` and `attention` indexes, the jobs table's `unindexed` one.
    indexed = {logical_id(stateful, stateful.tables.table(spec)) for spec in (EXECUTIONS, JOBS)}
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
    assert all(any(table_id in target for table_id in indexed) for target in index_targets)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_function_environment_carries_the_runtime_tuning(
    spec: FunctionSpec,
    stateless: StatelessStack,
    resources: dict[str, Any],
    logical_id: LogicalId,
    cdk_json_context: dict[str, Any],
) -> None:
    variables = _function(spec, stateless, resources, logical_id)["Environment"]["Variables"]
    tuning = DeployConfig.from_context(App(context=cdk_json_context).node).tuning

    assert tuning.environment().items() <= variables.items()
    assert variables["TAKT_DUE_SHARDS"] == "64"
    assert variables["TAKT_OPEN_SHARDS"] == "64"
    assert variables["TAKT_CLAIMER_THREADS"] == "32"


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_function_sets_no_takt_variable_settings_does_not_read(
    spec: FunctionSpec, stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    variables = _function(spec, stateless, resources, logical_id)["Environment"]["Variables"]
    takt_fields = {
        name.removeprefix("TAKT_").lower() for name in variables if name.startswith("TAKT_")
    }

    assert takt_fields <= set(Settings.model_fields)


def test_scheduler_memory_grows_with_the_shard_count_up_to_one_vcpu(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    scheduler = _function(SCHEDULER, stateless, resources, logical_id)

    # The shipped seed: 64 shards with the claim cursor, whose probes are two queries.
    assert scheduler["MemorySize"] == 1024
    assert [SCHEDULER.memory_for(shards) for shards in (1, 32, 64, 128)] == [256, 256, 512, 1024]
    with_cursor = [SCHEDULER.memory_for(n, due_cursor=True) for n in (1, 32, 64, 128)]
    assert with_cursor == [256, 512, 1024, 1769]
    assert WORKER.memory_for(128) == WORKER.memory_mb


def test_no_function_gets_a_signing_secret_unless_one_is_named(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    for spec in SPECS:
        variables = _function(spec, stateless, resources, logical_id)["Environment"]["Variables"]
        assert "TAKT_SIGNING_SECRET" not in variables


def test_named_signing_secret_reaches_only_the_worker_and_the_api_by_name(
    fargate_stateless: StatelessStack, fargate_template: Template, logical_id: LogicalId
) -> None:
    """The worker reads the value from Secrets Manager when it calls: neither the template nor
    the function's configuration holds it."""
    fargate_resources = fargate_template.to_json()["Resources"]
    variables = {
        spec.name: _function(spec, fargate_stateless, fargate_resources, logical_id)["Environment"][
            "Variables"
        ]
        for spec in SPECS
    }

    assert variables.pop(WORKER.name)["TAKT_SIGNING_SECRET_NAME"] == "takt/signing"
    # The API derives tenants' keys from it to show and rotate them.
    assert variables.pop(API.name)["TAKT_SIGNING_SECRET_NAME"] == "takt/signing"
    assert all("TAKT_SIGNING_SECRET" not in v for v in variables.values())
    assert "resolve:secretsmanager" not in json.dumps(fargate_resources)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_only_the_api_reads_metrics_and_lane_depths(
    spec: FunctionSpec,
    stateful: StatefulStack,
    stateless: StatelessStack,
    resources: dict[str, Any],
    resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    """The stats route reads takt's metrics (GetMetricData) and each lane's and DLQ's depth."""
    statements = _policy_statements(spec, stateless, resources, logical_id)
    metric_reads = [s["Resource"] for s in statements if "cloudwatch:GetMetricData" in _actions(s)]
    depth_reads = {
        json.dumps(resolve(target))
        for statement in statements
        if "sqs:GetQueueAttributes" in _actions(statement)
        for target in statement["Resource"]
    }

    def arns(kind: str) -> set[str]:
        return {
            json.dumps({"Fn::GetAtt": [logical_id(stateful, getattr(pair, kind)), "Arn"]})
            for pair in stateful.lanes.lanes.values()
        }

    if spec.reads_stats:
        assert metric_reads == ["*"]
        assert depth_reads == arns("queue") | arns("dlq")
    else:
        # The worker's event sources read their lanes' attributes; no one else reads a DLQ's.
        assert metric_reads == []
        assert not depth_reads & arns("dlq")


def test_the_claimer_is_capped_at_the_profiles_claimer_concurrency(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    """A burst of claims cannot take the account's concurrency from the API and the workers: the
    claimer's reservation is the profile's `claimerConcurrency`, room for a split hot minute's
    sub-partitions each claimed by its own claimer (docs/CAPACITY.md)."""
    claimer = resources[logical_id(stateless, stateless.functions.claimer)]["Properties"]

    assert claimer["ReservedConcurrentExecutions"] == PROFILES["seed"]["claimerConcurrency"], (
        "the claimer's reservation must be the profile's claimerConcurrency"
    )


def test_every_function_logs_a_sampled_share_of_its_invocations_at_debug(
    stateless_template: Template,
) -> None:
    """One INFO line per execution; DEBUG only in 1 % of invocations (Powertools' sample rate)."""
    functions = stateless_template.find_resources("AWS::Lambda::Function").values()
    takt = [
        f["Properties"]["Environment"]["Variables"]
        for f in functions
        if "TAKT_DUE_TABLE" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]

    assert len(takt) >= len(SPECS)
    assert {v["POWERTOOLS_LOGGER_SAMPLE_RATE"] for v in takt} == {"0.01"}
    assert {v["LOG_LEVEL"] for v in takt} == {"INFO"}


# DynamoDB actions no takt function calls on a table: a role holding them is wider than its code.
UNCALLED_TABLE_ACTIONS = {
    "dynamodb:Scan",
    "dynamodb:DescribeTable",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
}


# The watchdog's table step (takt.dispatch.ahead.TableScaleAhead) on provisioned tables.
TABLE_STEP_ACTIONS = {"dynamodb:DescribeTable", "dynamodb:UpdateTable"}


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_no_role_may_scan_describe_or_read_a_tables_stream_it_never_calls(
    spec: FunctionSpec,
    stateless: StatelessStack,
    resources: dict[str, Any],
    logical_id: LogicalId,
) -> None:
    """Least privilege: the item calls of takt's stores, and the indexer's stream read granted
    apart with its event source (a statement of stream actions only)."""
    for statement in _policy_statements(spec, stateless, resources, logical_id):
        actions = set(_actions(statement))
        if actions <= STREAM_ACTIONS:
            assert spec.name == "indexer", f"{spec.name} reads a stream"
            continue
        if actions == TABLE_STEP_ACTIONS:
            # The provisioned tables' step reads their budget and lowers them (granted on the
            # three tables it raises: tests/infra/test_infra_billing.py).
            assert spec.name == "watchdog", f"{spec.name} changes a table's capacity"
            continue
        assert not actions & UNCALLED_TABLE_ACTIONS, (
            f"{spec.name} may call {sorted(actions & UNCALLED_TABLE_ACTIONS)}, which it never does"
        )
