"""The CDK app: `npx cdk synth` runs `python -m infra.app` from the repository root.

cdk-nag's AWS Solutions rules run on every synth, so a finding fails review here rather than in
an audit; the tests apply the same checks.
"""

from __future__ import annotations

import os
import sys

import boto3
from aws_cdk import App, Aspects, Environment
from cdk_nag import AwsSolutionsChecks

from infra.context import DeployConfig
from infra.stateful import StatefulStack
from infra.stateless import StatelessStack

STATEFUL_STACK = "TaktStateful"
STATELESS_STACK = "TaktStateless"


def build(app: App) -> tuple[StatefulStack, StatelessStack]:
    """Add takt's stacks to `app`; the pair of the CDK CLI's region, or with `regions` the pair
    of the first region (`build_regions` gives every region's)."""
    return build_regions(app)[0]


def build_regions(app: App) -> list[tuple[StatefulStack, StatelessStack]]:
    """Add takt's stacks to `app`: two in the account and region the CDK CLI resolved, or with
    `regions` two in each of them, named after their region (`TaktStateful-us-east-2`).

    The first region's stateful stack holds the global tables, which create their replicas in
    the other regions; every other region's stateful stack (its lanes, its alarm topic, the
    lookup of its replica's stream) is deployed after it.
    """
    config = DeployConfig.from_context(app.node)
    account = os.environ.get("CDK_DEFAULT_ACCOUNT")
    pairs = []
    if config.regions is None:
        env = Environment(account=account, region=os.environ.get("CDK_DEFAULT_REGION"))
        stateful = StatefulStack(app, STATEFUL_STACK, config=config, env=env)
        stateless = StatelessStack(app, STATELESS_STACK, stateful=stateful, config=config, env=env)
        pairs.append((stateful, stateless))
    else:
        for region in config.regions.regions:
            env = Environment(account=account, region=region)
            stateful = StatefulStack(app, f"{STATEFUL_STACK}-{region}", config=config, env=env)
            if pairs:
                stateful.add_stack_dependency(pairs[0][0])
            stateless = StatelessStack(
                app, f"{STATELESS_STACK}-{region}", stateful=stateful, config=config, env=env
            )
            pairs.append((stateful, stateless))
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return pairs


def unconfigured_region_note(
    cli_region: str | None, configured_region: str | None, regions: object = None
) -> str | None:
    """What to tell a user whose templates the CLI bound to its fallback region: with no region
    configured (no AWS_REGION, no profile region), the CDK CLI still passes one (us-east-1), and
    `cdk deploy --app cdk.out` later deploys there whatever region its credentials name. With
    the `regions` context every stack is bound to a region it names, and the CLI's is unused."""
    if cli_region is None or configured_region is not None or regions:
        return None
    return (
        f"takt: no AWS region is configured, so cdk.out is bound to {cli_region}; to deploy "
        f"elsewhere, set AWS_REGION (or your profile's region) and synthesize again"
    )


def main() -> None:
    app = App()
    note = unconfigured_region_note(
        os.environ.get("CDK_DEFAULT_REGION"),
        boto3.session.Session().region_name,
        app.node.try_get_context("regions"),
    )
    if note is not None:
        print(note, file=sys.stderr)
    build_regions(app)
    app.synth()


if __name__ == "__main__":
    main()
