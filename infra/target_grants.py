"""What the workers may call beyond HTTP: the AWS resources a deployment names in its context.

A worker's role holds no grant on any function, state machine or API by default; each target a
deployment's jobs call is listed by ARN, and the workers (the function and the Fargate task) get
exactly those, with no wildcard:

- `lambdaTargets`: function ARNs (qualified to call a version or alias), for
  `lambda:InvokeFunction`;
- `stateMachineTargets`: state machine ARNs, for `states:StartExecution`;
- `sigv4Targets`: API Gateway route ARNs (`arn:aws:execute-api:REGION:ACCOUNT:API/STAGE/METHOD/
  PATH`), for `execute-api:Invoke`, and function ARNs, for `lambda:InvokeFunctionUrl` (their
  function URLs);
- `publishTargets`: SQS queue ARNs (`sqs:SendMessage`, `sqs:GetQueueUrl`), SNS topic ARNs
  (`sns:Publish`) and EventBridge bus ARNs (`events:PutEvents`) that queue-topic targets and
  notifications publish to. The watchdog, which also ends executions (and so notifies), gets the
  topics and buses;
- `oidcKeyArn`: the KMS RSA key (`arn:aws:kms:REGION:ACCOUNT:key/ID`, `RSA_2048`, `SIGN_VERIFY`)
  that signs OIDC tokens: `kms:Sign` and `kms:GetPublicKey` for the workers, `kms:GetPublicKey`
  for the API (its JWKS route).

- `containerCluster` (with `containerSubnets`, `containerSecurityGroups`,
  `containerExecutionRoleArn`, and optionally `containerTaskRoleArn`, `containerLogGroup`,
  `containerPublicIp`): container targets (takt.targets.container) run as Fargate tasks in that
  existing cluster. The workers get `ecs:RunTask` on takt's own task definitions (`takt-*`) in
  that cluster only, `ecs:DescribeTasks` and `ecs:StopTask` on that cluster's tasks,
  `ecs:RegisterTaskDefinition` and `ecs:DescribeTaskDefinition` (which take no resource), and
  `iam:PassRole` on the execution and task roles, to ECS tasks only. Without `containerCluster`
  a worker gets none of these, and a container target fails naming the knob.

A list is comma-separated with `-c` (`-c lambdaTargets=arn1,arn2`) or a JSON list in cdk.json.
An entry that is not such an ARN, or holds a `*`, stops the synth naming the knob.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from cdk_nag import NagPackSuppression, RegexAppliesTo

from takt.models.targets import (
    EventBusSpec,
    LambdaSpec,
    SnsSpec,
    SqsSpec,
    StateMachineSpec,
    parse_target,
)

_KMS_KEY = re.compile(r"^arn:aws[a-z-]*:kms:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:key/[A-Za-z0-9-]{1,64}$")
_EXECUTE_API = re.compile(
    r"^arn:aws[a-z-]*:execute-api:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:[a-z0-9]+/[^/\s]+/"
    r"(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)/[^\s]*$"
)


_ROLE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$")
_CLUSTER = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
_SUBNET = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SECURITY_GROUP = re.compile(r"^sg-[0-9a-f]{8,17}$")
_LOG_GROUP = re.compile(r"^[A-Za-z0-9_./#-]{1,512}$")
# The family prefix of the task definitions a worker registers (takt.targets.container).
TASK_FAMILY_PREFIX = "takt-"


class TargetGrantError(ValueError):
    """A target grant in the context is not an ARN of its kind; the message names the knob."""


@dataclass(frozen=True)
class ContainerPlacement:
    """Where container targets run (the context's `container*` knobs) and as whom."""

    cluster: str
    subnets: tuple[str, ...]
    security_groups: tuple[str, ...]
    execution_role: str
    task_role: str | None = None
    log_group: str = "/takt/containers"
    public_ip: bool = False

    def __post_init__(self) -> None:
        """Refuse a knob that is not what it names, naming it (TargetGrantError)."""
        required = [
            ("containerCluster", _CLUSTER, (self.cluster,)),
            ("containerSubnets", _SUBNET, self.subnets),
            ("containerSecurityGroups", _SECURITY_GROUP, self.security_groups),
            ("containerExecutionRoleArn", _ROLE, (self.execution_role,)),
            ("containerLogGroup", _LOG_GROUP, (self.log_group,)),
        ]
        for knob, _, values in required:
            if not values:
                raise TargetGrantError(f"context 'containerCluster' needs {knob!r}")
        # The task role is optional: without it the container's own code has no AWS role.
        optional = [("containerTaskRoleArn", _ROLE, (self.task_role,) if self.task_role else ())]
        for knob, pattern, values in required + optional:
            for value in values:
                if not pattern.match(value):
                    raise TargetGrantError(f"context {knob!r} {value!r} is not one")

    def environment(self, env_var: Callable[[str], str]) -> dict[str, str]:
        """The workers' settings (`takt.config.Settings.container_*`), by their variables."""
        values = {
            "container_cluster": self.cluster,
            "container_subnets": json.dumps(list(self.subnets)),
            "container_security_groups": json.dumps(list(self.security_groups)),
            "container_execution_role_arn": self.execution_role,
            "container_log_group": self.log_group,
            "container_public_ip": json.dumps(self.public_ip),
        }
        if self.task_role:
            values["container_task_role_arn"] = self.task_role
        return {env_var(field): value for field, value in values.items()}

    def grant(self, grantee: iam.IGrantable) -> None:
        """Run, watch and stop takt's tasks in the cluster, and hand them their roles."""
        stack = Stack.of(grantee)  # type: ignore[arg-type]
        head = f"arn:{stack.partition}:ecs:{stack.region}:{stack.account}"
        cluster = f"{head}:cluster/{self.cluster}"
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ecs:RunTask"],
                resources=[f"{head}:task-definition/{TASK_FAMILY_PREFIX}*"],
                conditions={"ArnEquals": {"ecs:cluster": cluster}},
            )
        )
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ecs:DescribeTasks", "ecs:StopTask"],
                resources=[f"{head}:task/{self.cluster}/*"],
            )
        )
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ecs:RegisterTaskDefinition", "ecs:DescribeTaskDefinition"],
                resources=["*"],
            )
        )
        roles = [self.execution_role, *([self.task_role] if self.task_role else [])]
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=roles,
                conditions={"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
            )
        )


def container_suppressions() -> list[NagPackSuppression]:
    """Why a worker that runs container targets holds three wildcards (none without them)."""
    return [
        NagPackSuppression(
            id="AwsSolutions-IAM5",
            reason=(
                "Container targets register a task definition per image and size, named "
                f"'{TASK_FAMILY_PREFIX}<digest>': RunTask is granted on that family prefix only, "
                "and only in the configured cluster (an ecs:cluster condition); DescribeTasks "
                "and StopTask on that cluster's tasks, whose ids ECS chooses."
            ),
            applies_to=[
                RegexAppliesTo(regex="/^Resource::arn:.*:ecs:.*:task-definition\\/takt-\\*$/g"),
                RegexAppliesTo(regex="/^Resource::arn:.*:ecs:.*:task\\/[A-Za-z0-9_-]+\\/\\*$/g"),
            ],
        ),
        NagPackSuppression(
            id="AwsSolutions-IAM5",
            reason=(
                "ECS's RegisterTaskDefinition and DescribeTaskDefinition accept no resource-level "
                "permission; the roles a definition may name are limited by iam:PassRole."
            ),
            applies_to=["Resource::*"],
        ),
    ]


@dataclass(frozen=True)
class TargetGrants:
    """The ARNs the workers may call, by what they may do with each."""

    lambda_functions: tuple[str, ...] = ()
    state_machines: tuple[str, ...] = ()
    execute_api_routes: tuple[str, ...] = ()
    function_urls: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    buses: tuple[str, ...] = ()
    oidc_key: str | None = None
    containers: ContainerPlacement | None = None

    @classmethod
    def from_lists(
        cls,
        lambdas: tuple[str, ...],
        machines: tuple[str, ...],
        signed: tuple[str, ...],
        published: tuple[str, ...] = (),
        oidc_key: str | None = None,
        containers: ContainerPlacement | None = None,
    ) -> TargetGrants:
        """Check each list's entries (TargetGrantError naming the knob and the entry)."""
        knobs = {
            "lambdaTargets": lambdas,
            "stateMachineTargets": machines,
            "sigv4Targets": signed,
            "publishTargets": published,
        }
        for knob, arns in knobs.items():
            for arn in arns:
                if "*" in arn:
                    raise TargetGrantError(f"context {knob!r} {arn!r} holds a wildcard")
        if oidc_key is not None and not _KMS_KEY.match(oidc_key):
            raise TargetGrantError(
                f"context 'oidcKeyArn' {oidc_key!r} is not a KMS key ARN (…:kms:REGION:ACCOUNT:"
                "key/ID; an alias cannot be granted)"
            )
        by_kind: dict[type, list[str]] = {SqsSpec: [], SnsSpec: [], EventBusSpec: []}
        for arn in published:
            kind = type(_spec(arn))
            if kind not in by_kind or not arn.startswith("arn:"):
                raise TargetGrantError(
                    f"context 'publishTargets' {arn!r} is not an SQS queue, SNS topic or "
                    "EventBridge bus ARN"
                )
            by_kind[kind].append(arn)
        for arn in lambdas:
            if not isinstance(_spec(arn), LambdaSpec):
                raise TargetGrantError(f"context 'lambdaTargets' {arn!r} is not a function ARN")
        for arn in machines:
            if not isinstance(_spec(arn), StateMachineSpec):
                raise TargetGrantError(
                    f"context 'stateMachineTargets' {arn!r} is not a state machine ARN"
                )
        routes, urls = [], []
        for arn in signed:
            if _EXECUTE_API.match(arn):
                routes.append(arn)
            elif isinstance(_spec(arn), LambdaSpec):
                urls.append(arn)
            else:
                raise TargetGrantError(
                    f"context 'sigv4Targets' {arn!r} is neither an API Gateway route ARN "
                    "(…:execute-api:REGION:ACCOUNT:API/STAGE/METHOD/PATH) nor a function ARN"
                )
        return cls(
            lambdas,
            machines,
            tuple(routes),
            tuple(urls),
            tuple(by_kind[SqsSpec]),
            tuple(by_kind[SnsSpec]),
            tuple(by_kind[EventBusSpec]),
            oidc_key,
            containers,
        )

    def grant(self, grantee: iam.IGrantable) -> None:
        """Give `grantee` exactly the listed calls (nothing when every list is empty)."""
        for actions, arns in (
            (["lambda:InvokeFunction"], self.lambda_functions),
            (["states:StartExecution"], self.state_machines),
            (["execute-api:Invoke"], self.execute_api_routes),
            (["lambda:InvokeFunctionUrl"], self.function_urls),
            (["sqs:SendMessage", "sqs:GetQueueUrl"], self.queues),
            (["kms:Sign", "kms:GetPublicKey"], (self.oidc_key,) if self.oidc_key else ()),
        ):
            if arns:
                iam.Grant.add_to_principal(
                    grantee=grantee, actions=actions, resource_arns=list(arns)
                )
        if self.containers is not None:
            self.containers.grant(grantee)
        self.grant_notify(grantee)

    def grant_jwks(self, grantee: iam.IGrantable) -> None:
        """What serving the OIDC JWKS needs: reading the key's public half."""
        if self.oidc_key:
            iam.Grant.add_to_principal(
                grantee=grantee, actions=["kms:GetPublicKey"], resource_arns=[self.oidc_key]
            )

    def grant_notify(self, grantee: iam.IGrantable) -> None:
        """What sending notifications needs: publishing to the listed topics and buses."""
        for actions, arns in ((["sns:Publish"], self.topics), (["events:PutEvents"], self.buses)):
            if arns:
                iam.Grant.add_to_principal(
                    grantee=grantee, actions=actions, resource_arns=list(arns)
                )


def _spec(arn: str) -> object:
    try:
        return parse_target(arn)
    except ValueError:
        return None
