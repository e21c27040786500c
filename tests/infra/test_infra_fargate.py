"""The optional Fargate worker: off by default; on, `takt worker` runs on Graviton with a public
IPv4 address a task and no NAT gateway (or in private subnets behind one, `fargateEgress`),
unreachable from outside, with the worker function's environment and grants, scales with its
lanes' depth, and is the only consumer of the lanes it serves."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra.app import build
from infra.context import ContextError, FargateWorkerConfig
from infra.functions import WORKER
from infra.stateful import StatefulStack
from infra.stateless import StatelessStack
from infra.worker_service import DOCKERFILE, IMAGE_DIR, image_exclude, task_subnets
from takt.resources import DUE

LogicalId = Callable[[Stack, IConstruct], str]
Resolve = Callable[[Any], Any]
ROOT = Path(__file__).resolve().parents[2]
ACCOUNT, REGION, VPC_ID = "123456789012", "us-east-1", "vpc-0123456789abcdef0"
# cdk.json's `fargateLanes`: `high` stays on the worker function (docs/CAPACITY.md).
SERVED_AS_SHIPPED = ("default", "low")
PRIVATE_SUBNETS = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"]
PUBLIC_SUBNETS = ["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"]


def _of_type(template: Template, resource_type: str) -> dict[str, dict[str, Any]]:
    return {key: dict(value) for key, value in template.find_resources(resource_type).items()}


def _one(template: Template, resource_type: str) -> dict[str, Any]:
    (resource,) = _of_type(template, resource_type).values()
    properties: dict[str, Any] = resource["Properties"]
    return properties


def _container(template: Template) -> dict[str, Any]:
    (container,) = _one(template, "AWS::ECS::TaskDefinition")["ContainerDefinitions"]
    found: dict[str, Any] = container
    return found


def _statements(template: Template, role_id: str, resolve: Resolve) -> list[tuple[str, str]]:
    """(action, resource) pairs the policies attached to a role allow, outputs resolved."""
    pairs = []
    for policy in _of_type(template, "AWS::IAM::Policy").values():
        properties = policy["Properties"]
        if {"Ref": role_id} not in properties["Roles"]:
            continue
        for statement in properties["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            targets = statement["Resource"]
            for action in [actions] if isinstance(actions, str) else actions:
                for target in targets if isinstance(targets, list) else [targets]:
                    pairs.append((action, json.dumps(resolve(target), sort_keys=True)))
    return pairs


def _queue_arn(stateful: StatefulStack, queue: IConstruct, logical_id: LogicalId) -> str:
    return json.dumps({"Fn::GetAtt": [logical_id(stateful, queue), "Arn"]}, sort_keys=True)


def test_without_the_switch_nothing_of_ecs_or_a_vpc_is_built(stateless_template: Template) -> None:
    types = {resource["Type"] for resource in stateless_template.to_json()["Resources"].values()}

    assert not {
        t for t in types if t.startswith(("AWS::ECS::", "AWS::EC2::", "AWS::ApplicationAuto"))
    }


def test_service_runs_takt_worker_on_graviton_with_the_context_size(
    fargate_template: Template,
) -> None:
    task = _one(fargate_template, "AWS::ECS::TaskDefinition")
    container = _container(fargate_template)

    assert task["RequiresCompatibilities"] == ["FARGATE"]
    assert task["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    assert (task["Cpu"], task["Memory"]) == ("512", "1024")
    assert container["Command"] == [
        "takt",
        "worker",
        "--lanes",
        "default,low",
        "--concurrency",
        "320",
        "--grace-sec",
        "100",
        "--log-level",
        "INFO",
    ]
    # SIGTERM to SIGKILL: the worker's grace, then 20 s to give back unfinished runs.
    assert container["StopTimeout"] == 120
    assert container["LinuxParameters"]["InitProcessEnabled"] is True


def test_container_reads_what_the_worker_function_reads(
    fargate_template: Template, fargate_stateless: StatelessStack, logical_id: LogicalId
) -> None:
    """Same variables and values; the signing secret comes from Secrets Manager, not the text."""
    container = _container(fargate_template)
    environment = {item["Name"]: item["Value"] for item in container["Environment"]}
    worker_id = logical_id(fargate_stateless, fargate_stateless.functions.worker)
    worker = fargate_template.to_json()["Resources"][worker_id]["Properties"]
    worker_variables = dict(worker["Environment"]["Variables"])
    # The function reads the secret by name when it calls; ECS injects the value at task start.
    worker_variables.pop("TAKT_SIGNING_SECRET_NAME")
    (secret,) = container["Secrets"]

    assert environment == worker_variables
    assert secret["Name"] == "TAKT_SIGNING_SECRET"
    assert json.dumps(secret["ValueFrom"]).endswith(':secret:takt/signing"]]}')


def test_task_role_holds_the_worker_functions_grants_and_consumes_its_lanes(
    fargate_template: Template,
    fargate_stacks: tuple[StatefulStack, StatelessStack],
    fargate_resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    stateful, stateless = fargate_stacks
    service = stateless.fargate_worker
    assert service is not None
    task_role = service.service.task_definition.task_role
    worker_role = stateless.functions.worker.role
    assert worker_role is not None
    task = _statements(fargate_template, logical_id(stateless, task_role), fargate_resolve)
    worker = _statements(fargate_template, logical_id(stateless, worker_role), fargate_resolve)
    lanes = {
        _queue_arn(stateful, stateful.lanes.lanes[lane].queue, logical_id)
        for lane in SERVED_AS_SHIPPED
    }

    def data(pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
        return {
            (action, target)
            for action, target in pairs
            if action.startswith("dynamodb:") or action == "sqs:SendMessage"
        }

    assert WORKER.tables and data(task) == data(worker)
    assert {target for action, target in task if action == "sqs:ReceiveMessage"} == lanes
    assert {target for action, target in task if action == "sqs:DeleteMessage"} == lanes
    # And the secrets HTTP targets name, as the worker function reads them, the AWS targets
    # the context lists (test_infra_target_grants.py), and its own metrics (PutMetricData).
    assert {action.split(":")[0] for action, _ in task} == {
        "cloudwatch",
        "dynamodb",
        "sqs",
        "secretsmanager",
        "lambda",
        "states",
        "execute-api",
        "sns",
        "events",
        "kms",
    }


def test_task_role_may_put_metrics_in_takts_namespace_only(
    fargate_template: Template, fargate_stateless: StatelessStack, logical_id: LogicalId
) -> None:
    """`takt worker` publishes ScheduleLag and the outcome counts itself (takt.worker.metrics)."""
    service = fargate_stateless.fargate_worker
    assert service is not None
    role = logical_id(fargate_stateless, service.service.task_definition.task_role)
    statements = [
        statement
        for policy in fargate_template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "cloudwatch:PutMetricData"
    ]

    assert statements == [
        {
            "Action": "cloudwatch:PutMetricData",
            "Condition": {"StringEquals": {"cloudwatch:namespace": "takt"}},
            "Effect": "Allow",
            "Resource": "*",
        }
    ]


def test_only_the_execution_role_may_read_the_signing_secret(
    fargate_template: Template,
    fargate_stateless: StatelessStack,
    fargate_resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    service = fargate_stateless.fargate_worker
    assert service is not None
    task = service.service.task_definition
    execution_role = task.execution_role
    assert execution_role is not None
    task_role = task.task_role
    reads = [
        (role, target)
        for role in (task_role, execution_role)
        for action, target in _statements(
            fargate_template, logical_id(fargate_stateless, role), fargate_resolve
        )
        if action == "secretsmanager:GetSecretValue"
    ]

    signing = [role for role, target in reads if target.endswith(':secret:takt/signing-??????"]]}')]
    assert signing == [execution_role]
    # The task role reads the secrets HTTP targets name, under the deployment's prefix only.
    [task_reads] = [target for role, target in reads if role is task_role]
    assert task_reads.endswith(':secret:takt/*"]]}')


def test_worker_logs_go_to_a_log_group_with_a_retention(fargate_template: Template) -> None:
    options = _container(fargate_template)["LogConfiguration"]
    group_id = options["Options"]["awslogs-group"]["Ref"]
    group = fargate_template.to_json()["Resources"][group_id]["Properties"]

    assert options["LogDriver"] == "awslogs"
    assert group["RetentionInDays"] == 30


def _subnets(template: Template, group: str) -> set[str]:
    """The logical ids of the app's VPC's subnets in a subnet group (`Workers`, `Public`)."""
    return {
        logical_id
        for logical_id in _of_type(template, "AWS::EC2::Subnet")
        if logical_id.startswith(f"FargateWorkerVpc{group}Subnet")
    }


def _task_network(template: Template) -> dict[str, Any]:
    service = _one(template, "AWS::ECS::Service")
    network: dict[str, Any] = service["NetworkConfiguration"]["AwsvpcConfiguration"]
    return network


def test_by_default_tasks_run_in_public_subnets_with_a_public_ip_and_no_nat_gateway(
    fargate_template: Template,
) -> None:
    """`fargateEgress` publicIp, the profiles' default: each task reaches its targets and the
    AWS APIs through its own public IPv4 address, so the VPC has no NAT gateway to pay for."""
    network = _task_network(fargate_template)
    workers = _subnets(fargate_template, "Workers")
    subnets = _of_type(fargate_template, "AWS::EC2::Subnet")

    assert network["AssignPublicIp"] == "ENABLED", "publicIp egress: each task gets a public IP"
    assert {subnet["Ref"] for subnet in network["Subnets"]} == workers
    assert len(workers) == 2 and all(
        subnets[s]["Properties"]["MapPublicIpOnLaunch"] is True
        and subnets[s]["Properties"]["CidrBlock"].endswith("/20")
        for s in workers
    ), "publicIp egress: the tasks' subnets are public, /20 as the private ones were"
    assert not _of_type(fargate_template, "AWS::EC2::NatGateway"), "publicIp egress: no NAT"
    assert not _of_type(fargate_template, "AWS::EC2::EIP"), "publicIp egress: no NAT's address"


def test_the_tasks_security_group_lets_nothing_in(fargate_template: Template) -> None:
    """With a public IP on every task, the security group is what keeps them unreachable: it
    has no inbound rule, inline or as a resource of its own, and only allows out; nor does the
    task map a port anything could connect to."""
    group = _one(fargate_template, "AWS::EC2::SecurityGroup")

    assert not _container(fargate_template).get("PortMappings"), "the task maps no port"
    assert "SecurityGroupIngress" not in group, "no inbound rule on the tasks' security group"
    assert not _of_type(fargate_template, "AWS::EC2::SecurityGroupIngress"), (
        "no inbound rule on the tasks' security group"
    )
    assert group["SecurityGroupEgress"] == [
        {
            "CidrIp": "0.0.0.0/0",
            "Description": "Allow all outbound traffic by default",
            "IpProtocol": "-1",
        }
    ]


def test_the_service_rolls_back_a_failed_deployment(fargate_template: Template) -> None:
    service = _one(fargate_template, "AWS::ECS::Service")

    assert service["DeploymentConfiguration"]["DeploymentCircuitBreaker"] == {
        "Enable": True,
        "Rollback": True,
    }
    # Left to autoscaling: a deployment must not reset the running count.
    assert "DesiredCount" not in service


def test_vpc_has_flow_logs_and_free_gateway_endpoints(fargate_template: Template) -> None:
    endpoints = _of_type(fargate_template, "AWS::EC2::VPCEndpoint").values()
    services = {json.dumps(e["Properties"]["ServiceName"]) for e in endpoints}

    assert _one(fargate_template, "AWS::EC2::FlowLog")["TrafficType"] == "ALL"
    assert {e["Properties"]["VpcEndpointType"] for e in endpoints} == {"Gateway"}
    assert any(".dynamodb" in name for name in services)
    assert any(".s3" in name for name in services)


def test_with_nat_gateway_egress_tasks_run_in_private_subnets_behind_one_nat_gateway(
    cli_assemblies: Callable[[str], Path],
) -> None:
    """`-c fargateEgress=natGateway` (the `fargate` variant, synthesized as the CLI does): the
    shape from before the public IPs, for a policy that forbids them on tasks; the tasks'
    subnets keep their addresses, so switching either way updates them in place."""
    (path,) = cli_assemblies("fargate").glob("TaktStateless*.template.json")
    template = Template.from_json(json.loads(path.read_text()))
    network = _task_network(template)
    workers = _subnets(template, "Workers")
    subnets = _of_type(template, "AWS::EC2::Subnet")

    assert network["AssignPublicIp"] == "DISABLED", "natGateway egress: no public IP on a task"
    assert {subnet["Ref"] for subnet in network["Subnets"]} == workers
    assert len(workers) == 2 and all(
        subnets[s]["Properties"]["MapPublicIpOnLaunch"] is False
        and subnets[s]["Properties"]["CidrBlock"].endswith("/20")
        for s in workers
    ), "natGateway egress: the tasks' subnets are private"
    assert len(_of_type(template, "AWS::EC2::NatGateway")) == 1, "natGateway egress: one NAT"
    assert "SecurityGroupIngress" not in _one(template, "AWS::EC2::SecurityGroup")


def test_cluster_has_container_insights(fargate_template: Template) -> None:
    cluster = _one(fargate_template, "AWS::ECS::Cluster")

    assert cluster["ClusterSettings"] == [{"Name": "containerInsights", "Value": "enabled"}]


def _scaling_alarm(template: Template, policy_name: str) -> dict[str, Any]:
    (alarm,) = [
        alarm["Properties"]
        for logical_id, alarm in _of_type(template, "AWS::CloudWatch::Alarm").items()
        if policy_name in logical_id
    ]
    found: dict[str, Any] = alarm
    return found


def _alarm_metric_names(alarm: dict[str, Any]) -> list[str]:
    return sorted(
        q["MetricStat"]["Metric"]["MetricName"] for q in alarm["Metrics"] if "MetricStat" in q
    )


def test_task_count_scales_out_while_messages_wait_and_in_after_idle_minutes_with_no_busy_slot(
    fargate_template: Template,
) -> None:
    target = _one(fargate_template, "AWS::ApplicationAutoScaling::ScalableTarget")
    scale_out = _scaling_alarm(fargate_template, "ScaleOutOnWaitingMessages")
    scale_in = _scaling_alarm(fargate_template, "ScaleInWhenIdle")

    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 4)
    # The lanes it serves as shipped (docs/CAPACITY.md): `high` stays on the worker function.
    served = len(SERVED_AS_SHIPPED)
    assert _alarm_metric_names(scale_out) == ["ApproximateNumberOfMessagesVisible"] * served
    assert (scale_out["ComparisonOperator"], scale_out["Threshold"]) == (
        "GreaterThanOrEqualToThreshold",
        1,
    )
    assert _alarm_metric_names(scale_in) == sorted(
        ["ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible"] * served
        + ["WorkerSlotsBusy"]
    ), (
        "issue 26: a run holds no lane message once leased, so idle also means no busy slot "
        "on any task (its Maximum), or scale-in would stop a long run"
    )
    (busy,) = [
        q
        for q in scale_in["Metrics"]
        if q.get("MetricStat", {}).get("Metric", {}).get("MetricName") == "WorkerSlotsBusy"
    ]
    assert busy["MetricStat"]["Stat"] == "Maximum"
    assert (scale_in["ComparisonOperator"], scale_in["Threshold"]) == (
        "LessThanOrEqualToThreshold",
        0,
    )
    assert scale_in["EvaluationPeriods"] == 15
    # Idle the whole time: down to the minimum at once (by the most tasks there can be).
    (step,) = _policy(fargate_template, "ScaleInWhenIdle")["StepAdjustments"]
    assert step["ScalingAdjustment"] == -4


def _policy(template: Template, name: str) -> dict[str, Any]:
    (policy,) = [
        value["Properties"]
        for logical_id, value in _of_type(
            template, "AWS::ApplicationAutoScaling::ScalingPolicy"
        ).items()
        if name in logical_id
    ]
    found: dict[str, Any] = (
        policy.get("StepScalingPolicyConfiguration")
        or policy["TargetTrackingScalingPolicyConfiguration"]
    )
    return found


def test_task_count_tracks_the_share_of_busy_slots_and_scales_in_on_it_for_short_runs(
    fargate_template: Template,
) -> None:
    tracking = _policy(fargate_template, "TrackBusySlots")

    assert tracking["CustomizedMetricSpecification"] == {
        "Namespace": "takt",
        "MetricName": "WorkerSlotsBusy",
        "Dimensions": [{"Name": "service", "Value": "takt"}],
        "Statistic": "Average",
    }
    # fargateJobSec 10: a removed task's runs end within its 100 s grace.
    assert (tracking["TargetValue"], tracking["DisableScaleIn"]) == (70, False)
    assert tracking["ScaleInCooldown"] == 300


def test_the_watchdog_sizes_the_service_ahead_of_the_due_index(
    fargate_template: Template,
    fargate_stacks: tuple[StatefulStack, StatelessStack],
    fargate_resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    stateful, stateless = fargate_stacks
    service = stateless.fargate_worker
    watchdog = stateless.functions.watchdog
    assert service is not None and watchdog.role is not None
    variables = fargate_template.to_json()["Resources"][logical_id(stateless, watchdog)][
        "Properties"
    ]["Environment"]["Variables"]
    target = _one(fargate_template, "AWS::ApplicationAutoScaling::ScalableTarget")
    granted = _statements(fargate_template, logical_id(stateless, watchdog.role), fargate_resolve)
    due_table = json.dumps(
        {"Fn::GetAtt": [logical_id(stateful, stateful.tables.table(DUE)), "Arn"]}, sort_keys=True
    )
    service_arn = json.dumps({"Ref": logical_id(stateless, service.service)}, sort_keys=True)

    # The service's resource id, exactly as its scalable target names it.
    assert variables["TAKT_FARGATE_SERVICE"] == target["ResourceId"]
    assert {key: variables[key] for key in variables if key.startswith("TAKT_SCALE_AHEAD")} == {
        "TAKT_SCALE_AHEAD_MINUTES": "5",
        "TAKT_SCALE_AHEAD_JOB_SEC": "10.0",
    }
    assert (variables["TAKT_FARGATE_SLOTS"], variables["TAKT_FARGATE_MAX_TASKS"]) == ("320", "4")
    assert ("dynamodb:Query", due_table) in granted
    assert ("application-autoscaling:DescribeScalableTargets", '"*"') in granted
    assert ("ecs:UpdateService", service_arn) in granted


def _scaling_statements(template: Template, role_id: str) -> dict[str, list[dict[str, Any]]]:
    """Each Application Auto Scaling action a role's policies allow, with its statements."""
    found: dict[str, list[dict[str, Any]]] = {}
    for policy in _of_type(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            for action in [actions] if isinstance(actions, str) else actions:
                if action.startswith("application-autoscaling:"):
                    found.setdefault(action, []).append(statement)
    return found


def test_the_watchdog_may_change_only_its_own_services_scalable_target(
    fargate_template: Template,
    fargate_stacks: tuple[StatefulStack, StatelessStack],
    logical_id: LogicalId,
) -> None:
    """Least privilege: RegisterScalableTarget accepts the scalable-target resource type and the
    aws:ResourceTag, service-namespace and scalable-dimension keys (Service Authorization
    Reference), so the watchdog's grant names them; only DescribeScalableTargets, which accepts
    neither a resource type nor a condition key, stays on "*"."""
    stateless = fargate_stacks[1]
    watchdog = stateless.functions.watchdog
    assert watchdog.role is not None
    target = _one(fargate_template, "AWS::ApplicationAutoScaling::ScalableTarget")
    granted = _scaling_statements(fargate_template, logical_id(stateless, watchdog.role))
    # The seed's provisioned tables' targets have a statement of their own
    # (tests/infra/test_infra_billing.py): this one is the service's.
    (register,) = [
        statement
        for statement in granted["application-autoscaling:RegisterScalableTarget"]
        if statement["Condition"]["StringEquals"]["application-autoscaling:service-namespace"]
        == "ecs"
    ]
    tags = {tag["Key"]: tag["Value"] for tag in target.get("Tags", [])}

    assert set(granted) == {
        "application-autoscaling:DescribeScalableTargets",
        "application-autoscaling:RegisterScalableTarget",
    }, "least privilege: the watchdog describes and registers scalable targets, nothing else"
    on_every_resource = {
        action
        for action, statements in granted.items()
        for statement in statements
        if statement["Resource"] == "*"
    }
    assert on_every_resource == {"application-autoscaling:DescribeScalableTargets"}, (
        "least privilege: only the action without resource-level permission may be on *"
    )
    assert register["Resource"] == {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":application-autoscaling:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":scalable-target/*",
            ],
        ]
    }, "least privilege: RegisterScalableTarget only on this account's and region's targets"
    assert register["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/takt:scaled-service": target["ResourceId"],
            "application-autoscaling:service-namespace": "ecs",
            "application-autoscaling:scalable-dimension": "ecs:service:DesiredCount",
        }
    }, "least privilege: RegisterScalableTarget only on the target tagged with this service"
    assert tags["takt:scaled-service"] == target["ResourceId"], (
        "least privilege: the service's scalable target carries the tag the grant requires"
    )


def test_without_the_fargate_worker_the_watchdog_sizes_no_service(
    stateless_template: Template,
) -> None:
    for function in _of_type(stateless_template, "AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        assert "TAKT_FARGATE_SERVICE" not in variables
        # The seed's provisioned tables are still raised ahead, on the tables' own horizon.
        assert variables.get("TAKT_SCALE_AHEAD_MINUTES") in (None, "5")
        assert "TAKT_SCALE_AHEAD_MINUTES" not in variables or "TAKT_TABLE_WRITE_FLOORS" in variables


def test_fewer_running_tasks_than_the_minimum_alarms_the_topic(
    fargate_template: Template,
    fargate_stacks: tuple[StatefulStack, StatelessStack],
    fargate_resolve: Resolve,
    logical_id: LogicalId,
) -> None:
    alarm = fargate_resolve(_scaling_alarm(fargate_template, "FargateWorkerNotRunning"))
    topic = {"Ref": logical_id(fargate_stacks[0], fargate_stacks[0].alarm_topic)}
    (query,) = alarm["Metrics"]

    assert query["MetricStat"]["Metric"]["Namespace"] == "ECS/ContainerInsights"
    assert query["MetricStat"]["Metric"]["MetricName"] == "RunningTaskCount"
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("LessThanThreshold", 1)
    assert alarm["TreatMissingData"] == "breaching"
    assert alarm["AlarmActions"] == [topic]


def test_image_build_context_holds_only_what_the_dockerfile_copies(
    fargate_stateless: StatelessStack, fargate_template: Template
) -> None:
    """The asset is staged at synth: cdk.out, .venv and node_modules must never be in it."""
    app = App.of(fargate_stateless)
    assert app is not None and fargate_template  # the template fixture has synthesized the app
    outdir = Path(app.outdir)
    manifest = json.loads((outdir / "TaktStateless.assets.json").read_text())
    (image,) = manifest["dockerImages"].values()
    context = outdir / image["source"]["directory"]

    assert image["source"]["dockerFile"] == "infra/worker_image/Dockerfile"
    assert image["source"]["platform"] == "linux/arm64"
    assert sorted(p.name for p in context.iterdir()) == [
        "README.md",
        "cli",
        "console",
        "functions",
        "infra",
        "layers",
        "pyproject.toml",
        "uv.lock",
    ]
    assert sorted(p.name for p in (context / "infra").iterdir()) == ["worker_image"]
    assert not list(context.rglob("__pycache__"))


def test_dockerfile_copies_only_what_its_ignore_file_lets_in() -> None:
    """A COPY of an excluded path would only fail at `cdk deploy`, in Docker."""
    allowed = {pattern[1:] for pattern in image_exclude() if pattern.startswith("!")}
    dockerfile = DOCKERFILE.read_text()
    sources = [
        source.rstrip("/")
        for line in dockerfile.splitlines()
        if line.startswith("COPY ")
        for source in line.split()[1:-1]
    ]

    assert sources
    assert set(sources) <= allowed
    assert dockerfile.startswith("#") and "\nFROM python:3.13-slim\n" in dockerfile
    assert re.search(r"uv sync --frozen --no-dev .*--no-editable", dockerfile)
    assert (IMAGE_DIR / "Dockerfile.dockerignore").read_text().count("\n*\n") == 1


@pytest.fixture(scope="module")
def variant(
    synth_context: Callable[..., dict[str, Any]],
) -> Iterator[tuple[StatefulStack, StatelessStack, Template]]:
    """Fargate on one lane only, at a fixed size, in an existing VPC with public and private
    subnets, behind its NAT gateway (`fargateEgress` natGateway).

    The VPC lookup is answered as `cdk.context.json` answers it after a real `cdk synth`.
    """
    lookup = (
        f"vpc-provider:account={ACCOUNT}:filter.vpc-id={VPC_ID}:region={REGION}"
        ":returnAsymmetricSubnets=true"
    )
    subnets = {
        kind: [
            {
                "subnetId": subnet,
                "cidr": f"10.1.{16 * i + offset}.0/20",
                "availabilityZone": f"{REGION}{'ab'[i]}",
                "routeTableId": f"rtb-0{kind[:2].lower()}aaaaaaaaaaaaa{i}",
            }
            for i, subnet in enumerate(ids)
        ]
        for kind, ids, offset in (("Private", PRIVATE_SUBNETS, 0), ("Public", PUBLIC_SUBNETS, 128))
    }
    context = synth_context(
        fargateWorker=True,
        fargateLanes="low",
        fargateMinTasks=2,
        fargateMaxTasks=2,
        fargateVpcId=VPC_ID,
        fargateEgress="natGateway",
        **{
            lookup: {
                "vpcId": VPC_ID,
                "vpcCidrBlock": "10.1.0.0/16",
                "ownerAccountId": ACCOUNT,
                "availabilityZones": [],
                "subnetGroups": [
                    {"name": kind, "type": kind, "subnets": found}
                    for kind, found in subnets.items()
                ],
            }
        },
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CDK_DEFAULT_ACCOUNT", ACCOUNT)
        patch.setenv("CDK_DEFAULT_REGION", REGION)
        stateful, stateless = build(App(context=context))
        yield stateful, stateless, Template.from_stack(stateless)


def test_lanes_the_service_serves_are_left_by_the_worker_function(
    variant: tuple[StatefulStack, StatelessStack, Template], logical_id: LogicalId
) -> None:
    stateful, _, template = variant
    # The lanes' mappings; the indexer's stream mapping is the one with a starting position.
    consumed = {
        json.dumps(mapping["Properties"]["EventSourceArn"], sort_keys=True)
        for mapping in _of_type(template, "AWS::Lambda::EventSourceMapping").values()
        if "StartingPosition" not in mapping["Properties"]
    }
    outputs = Template.from_stack(stateful).to_json()["Outputs"]
    by_function = {
        json.dumps(outputs[ref["Fn::GetStackOutput"]["OutputName"]]["Value"], sort_keys=True)
        for ref in map(json.loads, consumed)
    }
    lanes = stateful.lanes.lanes

    assert _container(template)["Command"][:4] == ["takt", "worker", "--lanes", "low"]
    assert by_function == {
        _queue_arn(stateful, lanes[lane].queue, logical_id) for lane in ("high", "default")
    }


def test_a_fixed_size_service_has_no_autoscaling(
    variant: tuple[StatefulStack, StatelessStack, Template],
) -> None:
    template = variant[2]

    assert _one(template, "AWS::ECS::Service")["DesiredCount"] == 2
    assert not _of_type(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert "TAKT_FARGATE_SERVICE" not in json.dumps(template.to_json())


def test_an_existing_vpc_is_used_as_found(
    variant: tuple[StatefulStack, StatelessStack, Template],
) -> None:
    template = variant[2]
    network = _one(template, "AWS::ECS::Service")["NetworkConfiguration"]["AwsvpcConfiguration"]

    assert not _of_type(template, "AWS::EC2::VPC")
    assert not _of_type(template, "AWS::EC2::NatGateway")
    assert network["Subnets"] == PRIVATE_SUBNETS, "natGateway egress: the given VPC's private"
    assert network["AssignPublicIp"] == "DISABLED"
    assert _one(template, "AWS::EC2::SecurityGroup")["VpcId"] == VPC_ID


def _given_vpc(public: list[str]) -> tuple[ec2.IVpc, FargateWorkerConfig]:
    vpc = ec2.Vpc.from_vpc_attributes(
        Stack(App(), "Given"),
        "Vpc",
        vpc_id=VPC_ID,
        availability_zones=[f"{REGION}a", f"{REGION}b"],
        public_subnet_ids=public or None,
        private_subnet_ids=PRIVATE_SUBNETS,
    )
    worker = FargateWorkerConfig(
        cpu=512, memory_mib=1024, min_tasks=1, max_tasks=2, lanes=("low",), vpc_id=VPC_ID
    )
    return vpc, worker


def test_in_a_given_vpc_public_ip_egress_runs_the_tasks_in_its_public_subnets() -> None:
    """`fargateVpcId` with the default `fargateEgress` publicIp: the VPC's public subnets (its
    internet gateway's), never its private ones; natGateway picks those (the fixture above)."""
    vpc, worker = _given_vpc(PUBLIC_SUBNETS)

    selection = task_subnets(vpc, worker)
    chosen = vpc.select_subnets(subnet_type=selection.subnet_type).subnet_ids

    assert chosen == PUBLIC_SUBNETS, "publicIp egress in a given VPC: its public subnets"


def test_a_given_vpc_without_public_subnets_is_refused_in_one_line_naming_the_knob() -> None:
    vpc, worker = _given_vpc([])

    with pytest.raises(ContextError) as refused:
        task_subnets(vpc, worker)

    assert str(refused.value).splitlines() == [
        f"context 'fargateEgress' is 'publicIp' but VPC {VPC_ID} has no public subnets: "
        "pass -c fargateEgress=natGateway to run the tasks in its private ones"
    ], "bad input: one line that names the knob and the way out"
