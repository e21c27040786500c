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

A list is comma-separated with `-c` (`-c lambdaTargets=arn1,arn2`) or a JSON list in cdk.json.
An entry that is not such an ARN, or holds a `*`, stops the synth naming the knob.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aws_cdk import aws_iam as iam

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


class TargetGrantError(ValueError):
    """A target grant in the context is not an ARN of its kind; the message names the knob."""


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

    @classmethod
    def from_lists(
        cls,
        lambdas: tuple[str, ...],
        machines: tuple[str, ...],
        signed: tuple[str, ...],
        published: tuple[str, ...] = (),
        oidc_key: str | None = None,
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
