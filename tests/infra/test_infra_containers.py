"""Container targets in the deployment: the context's `container*` knobs reach the workers'
settings, and the workers (the function and the Fargate task) get RunTask on takt's task
definitions in the named cluster only, DescribeTasks/StopTask on its tasks and PassRole on the
two roles to ECS tasks only; none of it without `containerCluster`. Synthesized as the CDK CLI
does, with a concrete region and account, so cdk-nag's suppressions meet literal ARNs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App

from infra.context import ContextError, DeployConfig
from tests.infra.cli_synth import synth_as_cli, templates

CLUSTER = "jobs"
EXECUTION_ROLE = "arn:aws:iam::123456789012:role/ecsTaskExecutionRole"
TASK_ROLE = "arn:aws:iam::123456789012:role/report-task"
CONTAINERS = {
    "fargateWorker": "true",
    "fargateLanes": "low",
    "containerCluster": CLUSTER,
    "containerSubnets": "subnet-0123456789abcdef0,subnet-0fedcba9876543210",
    "containerSecurityGroups": "sg-0123456789abcdef0",
    "containerExecutionRoleArn": EXECUTION_ROLE,
    "containerTaskRoleArn": TASK_ROLE,
}
ECS_ACTIONS = {
    "ecs:RunTask",
    "ecs:DescribeTasks",
    "ecs:StopTask",
    "ecs:RegisterTaskDefinition",
    "ecs:DescribeTaskDefinition",
    "iam:PassRole",
}


@pytest.fixture(scope="module")
def stateless(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The stateless template synthesized with container targets on (cdk-nag raising on an
    unsuppressed finding, as `cdk synth` fails)."""
    assembly = synth_as_cli(CONTAINERS, tmp_path_factory.mktemp("containers"))
    (path,) = [p for p in templates(assembly) if "Stateless" in p.name]
    template: dict[str, Any] = json.loads(Path(path).read_text())
    return template


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            found += resource["Properties"]["PolicyDocument"]["Statement"]
    return found


def _actions(statement: dict[str, Any]) -> set[str]:
    actions = statement["Action"]
    return {actions} if isinstance(actions, str) else set(actions)


def test_containers_run_task_is_granted_on_takt_families_in_the_named_cluster_only(
    stateless: dict[str, Any],
) -> None:
    runs = [s for s in _statements(stateless) if "ecs:RunTask" in _actions(s)]

    assert len(runs) == 2, "the worker function and the Fargate task may run container tasks"
    for statement in runs:
        assert statement["Resource"] == (
            "arn:aws:ecs:us-east-1:123456789012:task-definition/takt-*"
        ), f"RunTask only on takt's own task definitions: {statement}"
        assert statement["Condition"] == {
            "ArnEquals": {"ecs:cluster": f"arn:aws:ecs:us-east-1:123456789012:cluster/{CLUSTER}"}
        }, f"RunTask only in the named cluster: {statement}"


def test_containers_pass_role_reaches_the_two_roles_for_ecs_tasks_only(
    stateless: dict[str, Any],
) -> None:
    passes = [s for s in _statements(stateless) if "iam:PassRole" in _actions(s)]

    assert passes, "a worker hands its tasks their roles"
    for statement in passes:
        assert sorted(statement["Resource"]) == sorted([EXECUTION_ROLE, TASK_ROLE]), statement
        assert statement["Condition"] == {
            "StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}
        }, f"PassRole only to ECS tasks: {statement}"


def test_containers_settings_reach_the_worker_as_settings_reads_them(
    stateless: dict[str, Any],
) -> None:
    functions = [
        r["Properties"]["Environment"]["Variables"]
        for r in stateless["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and "Environment" in r["Properties"]
    ]
    workers = [env for env in functions if env.get("TAKT_CONTAINER_CLUSTER") == CLUSTER]

    assert workers, "the container placement reaches the functions' settings"
    assert json.loads(workers[0]["TAKT_CONTAINER_SUBNETS"]) == [
        "subnet-0123456789abcdef0",
        "subnet-0fedcba9876543210",
    ], "subnets arrive as the JSON list Settings reads"


def test_containers_off_by_default_grants_no_ecs_call(cdk_json_context: dict[str, Any]) -> None:
    config = DeployConfig.from_context(App(context=cdk_json_context).node)

    assert config.targets.containers is None, "the shipped context runs no containers"


@pytest.mark.parametrize(
    ("knob", "value", "message"),
    [
        ("containerSubnets", "", "needs 'containerSubnets'"),
        ("containerSubnets", "subnet-x", "'containerSubnets' 'subnet-x' is not one"),
        ("containerExecutionRoleArn", "role", "'containerExecutionRoleArn' 'role' is not one"),
        ("containerCluster", "a b", "'containerCluster' 'a b' is not one"),
    ],
)
def test_containers_bad_knob_stops_the_synth_naming_it(
    cdk_json_context: dict[str, Any], knob: str, value: str, message: str
) -> None:
    context = cdk_json_context | CONTAINERS | {knob: value}
    with pytest.raises(ContextError, match=message):
        DeployConfig.from_context(App(context=context).node)
