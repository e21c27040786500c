"""The optional Fargate worker: `takt worker` as an ECS service, for executions longer than Lambda's
15 minutes.

It runs the same worker loop as the worker function, reads the same `TAKT_*` environment and
holds the same grants, and it is the only consumer of the lanes it serves: the worker function
stops consuming them (see `Triggers`), because a run longer than the function's timeout would
fail there every time. The image is a CDK asset built by `cdk deploy`; synthesis only copies its
build context into cdk.out, so `cdk synth` needs no Docker.
"""

from __future__ import annotations

from aws_cdk import Duration, IgnoreMode, Stack, Tags
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagPackSuppression, NagSuppressions, RegexAppliesTo
from constructs import Construct

from infra import metric_names
from infra.context import (
    NAT_GATEWAY,
    PUBLIC_IP,
    SUBNET_RESERVED_ADDRESSES,
    TASK_SUBNET_MASKS,
    ContextError,
    DeployConfig,
    FargateWorkerConfig,
    settings_env_var,
)
from infra.functions import LOG_RETENTION, WORKER, grant_data_access, target_secrets_suppression
from infra.lanes import Lanes
from infra.layer import PROJECT_ROOT
from infra.tables import Tables
from infra.target_grants import container_suppressions
from takt.dispatch.ahead import ECS_DESIRED_COUNT, ECS_NAMESPACE
from takt.resources import DUE

IMAGE_DIR = PROJECT_ROOT / "infra" / "worker_image"
DOCKERFILE = IMAGE_DIR / "Dockerfile"
# Fargate's longest grace between SIGTERM and SIGKILL: a stopping task finishes what it runs.
STOP_TIMEOUT_SEC = 120
# How long `takt worker` lets runs finish after SIGTERM; the rest of the stop timeout is for
# giving back the runs that did not (a DynamoDB write and an SQS message each).
GRACE_SEC = STOP_TIMEOUT_SEC - 20
# Scale in only after the served lanes held no message, waiting or in flight, and no task had a
# busy slot, this long.
SCALE_IN_IDLE_MINUTES = 15
MINUTE = Duration.minutes(1)
# The share of its slots a task keeps busy under target tracking: headroom for the next minute's
# arrivals while a new task starts (about a minute on Fargate).
SLOTS_BUSY_TARGET = 70
# Between two removals of tasks by target tracking: the runs of the ones removed end meanwhile.
SCALE_IN_COOLDOWN_MINUTES = 5
# The tag the service's scalable target carries, its value the service's resource id: the
# watchdog may register (change) only the scalable target tagged with its own service.
SCALED_SERVICE_TAG = "takt:scaled-service"
# The subnet group the tasks run in, in the VPC the app builds: public with `fargateEgress`
# publicIp, private behind the NAT gateway with natGateway. The same name and size either way
# (`task_subnet_mask`), so the subnets keep their addresses when a deployment switches (an
# update in place, not a replacement whose new subnets would overlap the old ones).
TASK_SUBNETS = "Workers"
# The type of the subnets the tasks run in, by `fargateEgress`: the app's `TASK_SUBNETS` group,
# or those of a given VPC (`fargateVpcId`).
TASK_SUBNET_TYPE = {
    PUBLIC_IP: ec2.SubnetType.PUBLIC,
    NAT_GATEWAY: ec2.SubnetType.PRIVATE_WITH_EGRESS,
}


def image_exclude() -> list[str]:
    """The asset's exclude list: the patterns of the Dockerfile's own ignore file.

    One allow-list serves the CDK asset and a manual `docker build`, so cdk.out, .venv and
    node_modules are never copied into the build context.
    """
    lines = (IMAGE_DIR / "Dockerfile.dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def worker_command(lanes: tuple[str, ...], log_level: str, slots: int) -> list[str]:
    """The container's command: the worker loop on the lanes this service serves."""
    return [
        "takt",
        "worker",
        "--lanes",
        ",".join(lanes),
        "--concurrency",
        str(slots),
        "--grace-sec",
        str(GRACE_SEC),
        "--log-level",
        log_level,
    ]


def lane_messages(
    lanes: Lanes, served: tuple[str, ...], *, include_in_flight: bool
) -> cloudwatch.MathExpression:
    """Messages in the served lanes: those waiting, and with `include_in_flight` those received
    and not yet deleted, which with the worker busy slots too (`takt worker` deletes a run's
    message once it holds the lease, so a long run shows only in `WorkerSlotsBusy`, sampled at
    every metric flush)."""
    counts: dict[str, cloudwatch.IMetric] = {}
    for i, lane in enumerate(served):
        queue = lanes.lanes[lane].queue
        counts[f"waiting{i}"] = queue.metric_approximate_number_of_messages_visible(
            period=MINUTE, statistic="Maximum"
        )
        if include_in_flight:
            counts[f"running{i}"] = queue.metric_approximate_number_of_messages_not_visible(
                period=MINUTE, statistic="Maximum"
            )
    if include_in_flight:
        counts["busy"] = cloudwatch.Metric(
            namespace=metric_names.NAMESPACE,
            metric_name=metric_names.WORKER_SLOTS_BUSY.name,
            dimensions_map={metric_names.SERVICE_DIMENSION: metric_names.SERVICE},
            statistic="Maximum",
            period=MINUTE,
        )
    return cloudwatch.MathExpression(
        expression=" + ".join(f"FILL({metric_id}, 0)" for metric_id in counts),
        using_metrics=counts,
        period=MINUTE,
        label="Messages and slots busy" if include_in_flight else "Messages waiting",
    )


def task_subnet_mask(max_tasks: int) -> int:
    """The tasks' subnets' prefix length in the VPC the app builds: the smallest of
    `TASK_SUBNET_MASKS` whose subnet holds `max_tasks` addresses (infra.context refuses a
    `fargateMaxTasks` the largest cannot hold)."""
    return next(
        (
            mask
            for mask in TASK_SUBNET_MASKS
            if 2 ** (32 - mask) - SUBNET_RESERVED_ADDRESSES >= max_tasks
        ),
        TASK_SUBNET_MASKS[-1],
    )


def task_subnets(vpc: ec2.IVpc, worker: FargateWorkerConfig) -> ec2.SubnetSelection:
    """Where the tasks run: the app's own VPC's `TASK_SUBNETS` group; in a given VPC, its
    public subnets with `fargateEgress` publicIp and its private subnets with egress with
    natGateway (`TASK_SUBNET_TYPE`). A given VPC without public subnets fails the synth in one
    line naming the knob, not with the tasks unable to start."""
    if worker.vpc_id is None:
        return ec2.SubnetSelection(subnet_group_name=TASK_SUBNETS)
    if worker.egress == PUBLIC_IP and not vpc.public_subnets:
        raise ContextError(
            f"context 'fargateEgress' is {PUBLIC_IP!r} but VPC {worker.vpc_id} has no public "
            f"subnets: pass -c fargateEgress={NAT_GATEWAY} to run the tasks in its private ones"
        )
    return ec2.SubnetSelection(subnet_type=TASK_SUBNET_TYPE[worker.egress])


class FargateWorker(Construct):
    """A Container Insights cluster and an arm64 Fargate service, with a public IPv4 address a
    task or behind a NAT gateway (`fargateEgress`), never reachable from outside.

    Scaling follows the served lanes: a task is added for each minute a message waits, and one is
    removed only after the lanes held nothing, waiting or in flight, and no task had a busy slot
    for SCALE_IN_IDLE_MINUTES, so scale-in does not pick a task in the middle of a long run (the
    worker holds a run's message only until its lease; its busy slots show the run after that).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        tables: Tables,
        lanes: Lanes,
        environment: dict[str, str],
        config: DeployConfig,
        worker: FargateWorkerConfig,
        watchdog: lambda_.Function,
    ) -> None:
        super().__init__(scope, construct_id)
        self.worker = worker
        vpc = self._vpc(worker.vpc_id)
        self.cluster = ecs.Cluster(
            self, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED
        )
        task = ecs.FargateTaskDefinition(
            self,
            "Task",
            cpu=worker.cpu,
            memory_limit_mib=worker.memory_mib,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.ARM64,
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
            ),
        )
        grant_data_access(WORKER, task.task_role, tables, lanes)
        config.targets.grant(task.task_role)
        for lane in worker.lanes:
            lanes.lanes[lane].queue.grant_consume_messages(task.task_role)
        # `takt worker` sends its metrics with PutMetricData (takt.worker.metrics): awslogs marks
        # no log event as EMF, so none would be extracted from its output.
        task.task_role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": metric_names.NAMESPACE}},
            )
        )

        secrets: dict[str, ecs.Secret] = {}
        if config.signing_secret_name:
            # Injected by ECS at task start: the value is in neither the template nor the task
            # definition, and only the execution role may read it.
            signing_secret = secretsmanager.Secret.from_secret_name_v2(
                self, "SigningSecret", config.signing_secret_name
            )
            secrets[settings_env_var("signing_secret")] = ecs.Secret.from_secrets_manager(
                signing_secret
            )
        self.container = task.add_container(
            "Worker",
            image=ecs.ContainerImage.from_asset(
                str(PROJECT_ROOT),
                file=str(DOCKERFILE.relative_to(PROJECT_ROOT)),
                platform=ecr_assets.Platform.LINUX_ARM64,
                exclude=image_exclude(),
                ignore_mode=IgnoreMode.DOCKER,
            ),
            command=worker_command(worker.lanes, config.log_level, worker.slots),
            # The worker function's fairness settings too: the same gate runs before a lease.
            environment=environment | config.fairness.environment(WORKER.fairness),
            secrets=secrets or None,
            logging=ecs.LogDrivers.aws_logs(
                stream_prefix="worker",
                log_group=logs.LogGroup(self, "Logs", retention=LOG_RETENTION),
            ),
            stop_timeout=Duration.seconds(STOP_TIMEOUT_SEC),
            # An init process as PID 1 hands SIGTERM to the worker and reaps what it leaves.
            linux_parameters=ecs.LinuxParameters(self, "Linux", init_process_enabled=True),
        )
        # No inbound rule, whatever the egress: nothing connects to a task, with or without a
        # public address; the tasks only call out (the lanes, the tables, the targets).
        security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description="takt Fargate worker: no inbound; outbound to AWS APIs and HTTP targets",
            allow_all_outbound=True,
        )
        self.service = ecs.FargateService(
            self,
            "Service",
            cluster=self.cluster,
            task_definition=task,
            # Fixed size only without autoscaling: a deployment would otherwise reset the count.
            desired_count=worker.min_tasks if worker.min_tasks == worker.max_tasks else None,
            min_healthy_percent=100,
            max_healthy_percent=200,
            vpc_subnets=task_subnets(vpc, worker),
            security_groups=[security_group],
            assign_public_ip=worker.egress == PUBLIC_IP,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
        )
        if worker.max_tasks > worker.min_tasks:
            scaling = self._autoscale(lanes)
            if worker.scale_ahead_minutes > 0:
                self._scale_ahead(watchdog, tables, scaling)
        self._suppress_findings(task, reads_secret=bool(secrets))

    def _vpc(self, vpc_id: str | None) -> ec2.IVpc:
        """The given VPC (looked up at synth), or two AZs with flow logs and free gateway
        endpoints for DynamoDB and S3 (image layers).

        With `fargateEgress` publicIp (the profiles' default) the tasks' subnets are public and
        there is no NAT gateway: a task reaches HTTP targets and the AWS APIs through its own
        public IPv4 address ($0.005 an hour) instead of a gateway's $0.045 an hour and per GB.
        With natGateway they are private behind one NAT gateway, not one per AZ: a second would
        double the largest fixed cost for availability the lanes already give (a message waits
        while a task restarts). Either way the `Public` group is there (it holds the NAT gateway
        when there is one) and the tasks' group keeps its name and size, so switching is an
        update in place.
        """
        if vpc_id is not None:
            return ec2.Vpc.from_lookup(self, "Vpc", vpc_id=vpc_id)
        flow_logs = logs.LogGroup(self, "FlowLogs", retention=LOG_RETENTION)
        return ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=1 if self.worker.egress == NAT_GATEWAY else 0,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name=TASK_SUBNETS,
                    subnet_type=TASK_SUBNET_TYPE[self.worker.egress],
                    cidr_mask=task_subnet_mask(self.worker.max_tasks),
                ),
            ],
            gateway_endpoints={
                "DynamoDb": ec2.GatewayVpcEndpointOptions(
                    service=ec2.GatewayVpcEndpointAwsService.DYNAMODB
                ),
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
            },
            flow_logs={
                "FlowLogs": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.ALL,
                )
            },
        )

    def _scale_ahead(
        self, watchdog: lambda_.Function, tables: Tables, scaling: ecs.ScalableTaskCount
    ) -> None:
        """The watchdog's minute step sizes this service ahead of the due index
        (`takt.dispatch.ahead`): it reads the due table and may set the service's minimum."""
        worker = self.worker
        resource_id = f"service/{self.cluster.cluster_name}/{self.service.service_name}"
        values: dict[str, str] = {
            "scale_ahead_minutes": str(worker.scale_ahead_minutes),
            "scale_ahead_job_sec": str(worker.job_sec),
            "fargate_service": resource_id,
            "fargate_slots": str(worker.slots),
            "fargate_min_tasks": str(worker.min_tasks),
            "fargate_max_tasks": str(worker.max_tasks),
        }
        for field, value in values.items():
            watchdog.add_environment(settings_env_var(field), value)
        tables.grant(DUE, watchdog, write=False)
        # DescribeScalableTargets takes no resource type and no condition key in the Service
        # Authorization Reference (list_awsapplicationautoscaling): it is allowed on all or none.
        watchdog.add_to_role_policy(
            iam.PolicyStatement(
                actions=["application-autoscaling:DescribeScalableTargets"], resources=["*"]
            )
        )
        # RegisterScalableTarget accepts the scalable-target resource type, whose ARN ends in an
        # id Application Auto Scaling assigns at registration (CloudFormation returns no ARN),
        # and the keys aws:ResourceTag, service-namespace and scalable-dimension: the watchdog
        # may change only an ECS service's task count on a target tagged with this service.
        Tags.of(scaling).add(SCALED_SERVICE_TAG, resource_id)
        watchdog.add_to_role_policy(
            iam.PolicyStatement(
                actions=["application-autoscaling:RegisterScalableTarget"],
                resources=[
                    Stack.of(self).format_arn(
                        service="application-autoscaling",
                        resource="scalable-target",
                        resource_name="*",
                    )
                ],
                conditions={
                    "StringEquals": {
                        f"aws:ResourceTag/{SCALED_SERVICE_TAG}": resource_id,
                        "application-autoscaling:service-namespace": ECS_NAMESPACE,
                        "application-autoscaling:scalable-dimension": ECS_DESIRED_COUNT,
                    }
                },
            )
        )
        # What RegisterScalableTarget checks and does on the service on the caller's behalf.
        watchdog.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ecs:DescribeServices", "ecs:UpdateService"],
                resources=[self.service.service_arn],
            )
        )
        NagSuppressions.add_resource_suppressions(
            watchdog.role,  # type: ignore[arg-type]
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "Application Auto Scaling's DescribeScalableTargets accepts no "
                        "resource-level permission; RegisterScalableTarget is limited to the "
                        "scalable target tagged with this service, whose ARN's id is assigned "
                        "at registration."
                    ),
                    applies_to=[
                        "Resource::*",
                        RegexAppliesTo(
                            regex="/^Resource::arn:.*:application-autoscaling:.*:scalable-target\\/\\*$/g"
                        ),
                    ],
                )
            ],
            apply_to_children=True,
        )

    def _autoscale(self, lanes: Lanes) -> ecs.ScalableTaskCount:
        scaling = self.service.auto_scale_task_count(
            min_capacity=self.worker.min_tasks, max_capacity=self.worker.max_tasks
        )
        scaling.scale_to_track_custom_metric(
            "TrackBusySlots",
            metric=cloudwatch.Metric(
                namespace=metric_names.NAMESPACE,
                metric_name=metric_names.WORKER_SLOTS_BUSY.name,
                dimensions_map={metric_names.SERVICE_DIMENSION: metric_names.SERVICE},
                statistic="Average",
                period=MINUTE,
            ),
            target_value=SLOTS_BUSY_TARGET,
            # A task it removes stops receiving and finishes its runs within GRACE_SEC; runs
            # expected to last longer would be given back and start over, so for those only
            # ScaleInWhenIdle removes tasks (after a top-of-hour fleet has been scaled ahead,
            # a busy lane would then keep it until the lanes are idle).
            disable_scale_in=self.worker.job_sec > GRACE_SEC,
            scale_in_cooldown=Duration.minutes(SCALE_IN_COOLDOWN_MINUTES),
            scale_out_cooldown=MINUTE,
        )
        scaling.scale_on_metric(
            "ScaleOutOnWaitingMessages",
            metric=lane_messages(lanes, self.worker.lanes, include_in_flight=False),
            scaling_steps=[
                autoscaling.ScalingInterval(upper=0, change=0),
                autoscaling.ScalingInterval(lower=1, change=1),
            ],
            adjustment_type=autoscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            evaluation_periods=1,
            cooldown=MINUTE,
        )
        # Idle for the whole period: down to the minimum at once (the scale-ahead step may hold
        # the minimum up), not one task per period, which after a top-of-hour fleet of hundreds
        # would take days.
        scaling.scale_on_metric(
            "ScaleInWhenIdle",
            metric=lane_messages(lanes, self.worker.lanes, include_in_flight=True),
            # Fewer tasks by the most there can be: clamped at the minimum.
            scaling_steps=[
                autoscaling.ScalingInterval(upper=0, change=-self.worker.max_tasks),
                autoscaling.ScalingInterval(lower=1, change=0),
            ],
            adjustment_type=autoscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            evaluation_periods=SCALE_IN_IDLE_MINUTES,
            cooldown=Duration.minutes(SCALE_IN_IDLE_MINUTES),
        )
        return scaling

    def _suppress_findings(self, task: ecs.FargateTaskDefinition, *, reads_secret: bool) -> None:
        """Suppress the cdk-nag findings the service cannot avoid, each for a reason."""
        NagSuppressions.add_resource_suppressions(
            task,
            [
                NagPackSuppression(
                    id="AwsSolutions-ECS2",
                    reason=(
                        "The environment holds only table names, queue URLs, the region and "
                        "tuning numbers, the same configuration the functions get; the one "
                        "secret (the signing secret) is injected from Secrets Manager."
                    ),
                )
            ],
        )
        NagSuppressions.add_resource_suppressions(
            task.task_role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "DynamoDB grants cover a table's indexes as '<table>/index/*': the "
                        "executions table's sparse indexes let the worker find executions "
                        "without a scan, as the worker function does."
                    ),
                    applies_to=[RegexAppliesTo(regex="/^Resource::.*\\/index\\/\\*$/g")],
                ),
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "PutMetricData has no resource-level permission; the statement's "
                        "cloudwatch:namespace condition limits the worker to takt's namespace."
                    ),
                    applies_to=["Resource::*"],
                ),
                target_secrets_suppression(),
                *container_suppressions(),
            ],
            apply_to_children=True,
        )
        execution_role = task.obtain_execution_role()
        wildcards = [
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason=(
                    "ecr:GetAuthorizationToken accepts no resource-level permission; the image "
                    "pull itself is limited to the CDK asset repository."
                ),
                applies_to=["Resource::*"],
            )
        ]
        if reads_secret:
            wildcards.append(
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "A secret's ARN ends in six random characters Secrets Manager adds; the "
                        "grant names the secret and matches only that suffix ('-??????')."
                    ),
                    applies_to=[
                        RegexAppliesTo(regex="/^Resource::.*:secret:.*-\\?\\?\\?\\?\\?\\?$/g")
                    ],
                )
            )
        NagSuppressions.add_resource_suppressions(execution_role, wildcards, apply_to_children=True)
