"""Synthesize takt's app exactly as the CDK CLI runs it, and lint what comes out.

The CLI starts `python -m infra.app` with a concrete region (always) and account (with
credentials) in CDK_DEFAULT_REGION/CDK_DEFAULT_ACCOUNT, the context in CDK_CONTEXT_JSON and the
output folder in CDK_OUTDIR. ARNs then hold literal values instead of `<AWS::Region>` tokens, which
is what broke a cdk-nag suppression while the token-only tests stayed green, so these helpers run
the app under that same contract. cdk.json's `annotationsInValidationReport` stays on, as
the CLI has it: a cdk-nag error makes the synthesis raise, as it makes `cdk synth` fail.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# What `cdk synth` passes with credentials for this (made-up) account in us-east-1.
CLI_ENV = {"CDK_DEFAULT_REGION": "us-east-1", "CDK_DEFAULT_ACCOUNT": "123456789012"}

# The deployment across regions docs/DEPLOY.md gives as its example.
REGIONS_CONTEXT = {"regions": "us-east-1,us-east-2", "witnessRegion": "us-west-2"}

# Every context variant docs/DEPLOY.md documents, added to cdk.json's context.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "jwt": {
        "auth": "jwt",
        "jwtIssuer": "https://issuer.example/",
        "jwtAudience": "takt",
    },
    # The Fargate worker behind a NAT gateway, for a policy that forbids public IPs on tasks
    # (the profiles give each task one: the shipped context, `default`).
    "fargate": {"fargateWorker": "true", "fargateLanes": "low", "fargateEgress": "natGateway"},
    "fairness": {
        "fairness": json.dumps(
            {
                "claimMaxItems": 500,
                "fairDispatchPerSec": 20,
                "tenantLimits": {"max_jobs": 10000},
                "hostRateLimits": {"api.example.com": {"per_sec": 5}},
            }
        )
    },
    "signing-secret": {"signingSecretName": "takt/signing"},
    "egress-allow": {"egressAllow": "10.0.0.0/8,internal.example"},
    "alarm-email": {"alarmEmail": "ops@example.com"},
    # Container targets on the Fargate worker and the worker function (docs/DEPLOY.md).
    "containers": {
        "fargateWorker": "true",
        "fargateLanes": "low",
        "containerCluster": "jobs",
        "containerSubnets": "subnet-0123456789abcdef0",
        "containerSecurityGroups": "sg-0123456789abcdef0",
        "containerExecutionRoleArn": "arn:aws:iam::123456789012:role/ecsTaskExecutionRole",
    },
    # AWS targets, notification destinations and the OIDC key (docs/WORKERS.md, SECURITY.md).
    "aws-targets": {
        "lambdaTargets": "arn:aws:lambda:us-east-1:111122223333:function:report",
        "stateMachineTargets": "arn:aws:states:us-east-1:111122223333:stateMachine:orders",
        "sigv4Targets": "arn:aws:execute-api:us-east-1:111122223333:abc123/prod/POST/hooks",
        "publishTargets": "arn:aws:sns:us-east-1:111122223333:ops",
        "oidcKeyArn": "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "notifyDefaults": json.dumps({"acme": {"to": "arn:aws:sns:us-east-1:111122223333:ops"}}),
    },
    "small": {"profile": "small"},
    "tenx": {"profile": "tenx"},
    # The seed's tables on demand rather than provisioned (docs/DEPLOY.md, "Table billing").
    "on-demand": {"tableBilling": "onDemand"},
    # Two regions and the lease table's witness in a third (docs/DEPLOY.md, "Regions"): a stack
    # pair per region, each bound to its own region whatever the CLI's is.
    "regions": REGIONS_CONTEXT,
}

# cfn-lint's rules we do not apply, each with the reason; a finding of any other rule fails.
# The value is a regex of the logical ids the exception covers (`.*` for every resource).
CFN_LINT_IGNORED: dict[str, tuple[str, str]] = {
    "W3005": (
        ".*",
        "The CDK adds DependsOn on a role's default policy beside the GetAtt of the role, so the "
        "function waits for its permissions, not only its role; the warning is about style.",
    ),
    "WS1004": (
        ".*",
        "Each takt function logs to a LogGroup of its own with a retention (LoggingConfig), "
        "which the rule does not recognise: it only looks for '/aws/lambda/<function name>'. "
        "CDK's custom-resource provider (the VPC's default security group) logs under the "
        "default group; tests/infra/test_infra_stateless.py checks every takt log group's "
        "retention.",
    ),
    "WS1000": (
        "CustomVpcRestrictDefaultSG.*",
        "The CDK's own custom-resource provider that empties the VPC's default security group "
        "runs once per deployment; every takt function traces actively.",
    ),
    "ES6000": (
        ".*(Dlq|IndexFailures).*",
        "These queues are dead-letter queues (the lanes') or a failure destination (the "
        "indexer's): a dead-letter queue of a dead-letter queue would only move the problem.",
    ),
    "ES1001": (
        ".*SqsEventSource.*",
        "Lambda's on-failure destinations apply to stream and Kafka sources, not SQS: a lane "
        "message that keeps failing goes to the lane's dead-letter queue by its redrive policy.",
    ),
    "ES4000": (
        "Triggers.*",
        "The per-minute EventBridge rules start the scheduler and the watchdog; a delivery that "
        "fails is replaced by the next minute's, and SchedulerNotRunning pages if none arrives.",
    ),
    "ES1007": (
        "Triggers.*",
        "The rules' targets have their asynchronous retries set on the function itself "
        "(retry_attempts and max_event_age on the scheduler, so no stale minute is replayed); "
        "the rule does not relate that EventInvokeConfig to the permission.",
    ),
    "ES7000": (
        "AlarmTopic.*",
        "The alarm e-mail subscription has no dead-letter queue: an undeliverable e-mail would sit "
        "in a queue nobody reads, while the alarm itself stays in ALARM on the dashboard.",
    ),
}


# Rules a context variant gives up on purpose, by variant, in the same form.
CFN_LINT_IGNORED_BY_VARIANT: dict[str, dict[str, tuple[str, str]]] = {
    "regions": {
        "WS1000": (
            "AWS679f53fac002430cb0da5b7982bd2287.*",
            "The CDK's AwsCustomResource function reads the stream ARN of a region's replica of "
            "the jobs table once per deployment (infra/tables.py, _stream_arn); it offers no "
            "tracing setting, and every takt function traces actively.",
        )
    },
    "small": {
        "WS1000": (
            "Functions.*",
            "The small profile turns X-Ray tracing off on every function, one of the savings "
            "that keep its idle cost under $8 a month (docs/DEPLOY.md, Profiles).",
        )
    },
}


@dataclass(frozen=True)
class LintFinding:
    rule: str
    template: str
    resource: str
    message: str


@contextmanager
def _environment(variables: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def cli_context(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """cdk.json's context with `-c` overrides, without bundling (the layer build needs PyPI)."""
    context: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text())["context"]
    return context | {"aws:cdk:bundling-stacks": []} | dict(overrides)


def synth_as_cli(overrides: Mapping[str, Any], outdir: Path) -> Path:
    """Build and synthesize the app as `cdk synth -c ...` does; the assembly lands in `outdir`.

    The context and output folder go to `App` directly: the CLI hands them over in
    CDK_CONTEXT_JSON and CDK_OUTDIR, which the CDK reads in its Node process, started once per
    test process. The account and region go through the environment, as `infra.app.build` reads
    them. Raises as `infra.app.main` does on a cdk-nag error, with the validation report's
    findings appended so the failure says what broke.
    """
    from aws_cdk import App  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    from infra.app import build  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    with _environment(CLI_ENV):
        app = App(context=cli_context(overrides), outdir=str(outdir))
        build(app)
        try:
            app.synth()
        except RuntimeError as exc:
            report = outdir / "validation-report.json"
            detail = report.read_text() if report.exists() else ""
            raise RuntimeError(f"{exc}\n{detail}") from None
    return outdir


def templates(assembly: Path) -> list[Path]:
    return sorted(assembly.glob("*.template.json"))


def stack_names(context: Mapping[str, Any]) -> list[str]:
    """The stacks `context` synthesizes, sorted: a pair, or with `regions` a pair per region."""
    regions = [region for region in str(context.get("regions", "")).split(",") if region]
    suffixes = [f"-{region}" for region in regions] or [""]
    return sorted(
        f"{stack}{suffix}" for stack in ("TaktStateful", "TaktStateless") for suffix in suffixes
    )


def template_region(path: Path) -> str:
    """The region a template deploys to: its stack's suffix, else the CLI's region."""
    match = re.search(r"-([a-z]{2}(?:-[a-z]+)+-[0-9])\.template\.json$", path.name)
    return match.group(1) if match else CLI_ENV["CDK_DEFAULT_REGION"]


def cfn_lint(paths: list[Path]) -> list[LintFinding]:
    """Every cfn-lint finding (core and serverless rules) on `paths`, each for its region
    (`template_region`).

    In process through cfn-lint's API: a `cfn-lint` subprocess per template would spend most of
    its time loading the rules.
    """
    from cfnlint.api import ManualArgs, lint_file  # noqa: PLC0415 - cfn-lint is slow to import

    return [
        LintFinding(
            rule=match.rule.id,
            template=Path(match.filename or "").name,
            resource=_resource_of(match.path),
            message=match.message,
        )
        for path in paths
        for match in lint_file(
            path,
            config=ManualArgs(
                append_rules=["cfn_lint_serverless.rules"], regions=[template_region(path)]
            ),
        )
    ]


def _resource_of(path: Sequence[Any]) -> str:
    return str(path[1]) if len(path) > 1 and path[0] == "Resources" else ""


def cloudwatch_alarm_grants(assembly: Path) -> set[tuple[str, str]]:
    """(resource type, action) of each Allow the templates give CloudWatch for this account.

    Only statements conditioned on aws:SourceAccount count: an unconditioned one would let any
    account's alarms use the topic.
    """
    grants: set[tuple[str, str]] = set()
    for path in templates(assembly):
        for resource in json.loads(path.read_text())["Resources"].values():
            properties = resource.get("Properties", {})
            document = properties.get("PolicyDocument") or properties.get("KeyPolicy") or {}
            for statement in filter(_for_this_accounts_alarms, document.get("Statement", [])):
                actions = statement["Action"]
                grants |= {
                    (resource["Type"], action)
                    for action in ([actions] if isinstance(actions, str) else actions)
                }
    return grants


def _for_this_accounts_alarms(statement: Mapping[str, Any]) -> bool:
    condition = statement.get("Condition", {})
    return (
        statement["Effect"] == "Allow"
        and statement.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
        and "aws:SourceAccount" in condition.get("StringEquals", {})
    )
