"""`takt deploy check`: before `cdk deploy`, what the account will refuse or throttle.

Run from the repository (it reads cdk.json and the CDK app's context rules in `infra/`, so the
numbers are the ones the stacks would set) with the credentials and region you deploy with; with
`-c regions=...` it checks each of those regions, whose quotas are their own.
Everything is imported inside the command, so `takt --help` stays cheap.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from takt_cli.commands.errors import CliError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_lambda import LambdaClient


@click.group()
def deploy() -> None:
    """Before cdk deploy: what the account's Lambda and DynamoDB limits refuse or throttle."""


@deploy.command()
@click.option(
    "-c",
    "--context",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="A context value, as `cdk deploy -c` takes it (repeatable), e.g. profile=small.",
)
@click.option(
    "--cdk-json",
    default="cdk.json",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The CDK app's cdk.json, whose context is the shipped one.",
)
def check(overrides: tuple[str, ...], cdk_json: Path) -> None:
    """Read the account's Lambda and DynamoDB limits and say what the deployment would break."""
    import boto3  # noqa: PLC0415 - only this command loads the CDK app and boto3
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - only this command loads the CDK app and boto3

    # Before the CDK app is loaded (jsii starts Node, seconds): without credentials nothing below
    # can be read, so say so at once.
    if boto3.session.Session().get_credentials() is None:
        raise CliError(
            "no AWS credentials found: run it with the credentials you deploy with "
            "(AWS_PROFILE, environment variables, SSO or an instance role)"
        )
    # The CDK library is this command's own tool: Node's end-of-life banner would only repeat on
    # every run what `npx cdk` already tells the user.
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")

    from infra.context import ContextError  # noqa: PLC0415 - only this command loads the CDK app and boto3
    from infra.deploy_check import DictContext, check, check_regions, plan  # noqa: PLC0415 - only this command loads the CDK app and boto3
    from takt.aws import make_clients, make_lambda_client  # noqa: PLC0415 - only this command loads the CDK app and boto3
    from takt.config import get_settings  # noqa: PLC0415 - only this command loads the CDK app and boto3

    try:
        context = dict(json.loads(cdk_json.read_text())["context"])
    except (OSError, ValueError, KeyError) as exc:
        raise CliError(f"cannot read the context of {cdk_json}: {exc}") from None
    for given in overrides:
        key, sep, value = given.partition("=")
        if not sep or not key:
            raise CliError(f"--context takes KEY=VALUE, not {given!r}")
        context[key] = value
    try:
        wanted = plan(DictContext(context))
    except ContextError as exc:
        raise CliError(str(exc)) from None
    settings = get_settings()

    def clients(region: str) -> tuple[LambdaClient, DynamoDBClient]:
        regional = settings.model_copy(update={"region": region})
        return make_lambda_client(regional, None), make_clients(regional).dynamodb

    try:
        if wanted.regions:
            findings = check_regions(wanted, clients)
        else:
            findings = check(wanted, *clients(settings.region))
    except (BotoCoreError, ClientError) as exc:
        # No credentials, or a role without lambda:GetAccountSettings/dynamodb:DescribeLimits.
        raise CliError(f"cannot read the account's Lambda and DynamoDB limits: {exc}") from None
    for finding in findings:
        click.echo(f"{finding.level:8} {finding.message}")
    if any(finding.level == "fail" for finding in findings):
        raise SystemExit(1)
