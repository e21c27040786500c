"""The CDK app: `npx cdk synth` runs `python -m infra.app` from the repository root.

cdk-nag's AWS Solutions rules run on every synth, so a finding fails review here rather than in
an audit; the tests apply the same checks.
"""

from __future__ import annotations

import os

from aws_cdk import App, Aspects, Environment
from cdk_nag import AwsSolutionsChecks

from infra.context import DeployConfig
from infra.stateful import StatefulStack
from infra.stateless import StatelessStack

STATEFUL_STACK = "TaktStateful"
STATELESS_STACK = "TaktStateless"


def build(app: App) -> tuple[StatefulStack, StatelessStack]:
    """Add takt's two stacks to `app`, in the account and region the CDK CLI resolved."""
    config = DeployConfig.from_context(app.node)
    env = Environment(
        account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")
    )
    stateful = StatefulStack(app, STATEFUL_STACK, config=config, env=env)
    stateless = StatelessStack(app, STATELESS_STACK, stateful=stateful, config=config, env=env)
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return stateful, stateless


def main() -> None:
    app = App()
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
