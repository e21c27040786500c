"""Synthesize takt's CDK app once per test process, with cdk.json's context and no bundling.

Synthesis with cdk-nag takes seconds, so every test in this folder shares one app as shipped but
with the worker function on every lane (`-c fargateWorker=false`: the seed profile ships the
Fargate worker on its `default` and `low` lanes, which the CLI synth variants test as shipped),
and one with the Fargate worker and a signing secret on (`fargate_*` fixtures, the test fleet's
`fargateMaxTasks` its own). Bundling is
skipped (`aws:cdk:bundling-stacks: []`): the layer build needs uv and PyPI, and these tests must
run offline. The worker image is only staged (copied into cdk.out), which needs no Docker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from tests.infra.cli_synth import VARIANTS, synth_as_cli

# Set before anything imports aws_cdk (which starts its Node process), hence the imports of CDK
# modules inside the fixtures below: Node 20 would print an end-of-life banner on every run.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")

if TYPE_CHECKING:
    from aws_cdk import Stack
    from aws_cdk.assertions import Template
    from constructs import IConstruct

    from infra.stateful import StatefulStack
    from infra.stateless import StatelessStack

ROOT = Path(__file__).resolve().parents[2]


def shipped_context() -> dict[str, Any]:
    """The values a plain `cdk deploy` uses: the default profile's, with cdk.json's over them."""
    from infra.context import DEFAULT_PROFILE, PROFILES  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    context: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text())["context"]
    return dict(PROFILES[DEFAULT_PROFILE]) | context


def cdk_context(**overrides: Any) -> dict[str, Any]:
    """cdk.json's context, as `cdk synth` would see it, without bundling.

    `annotationsInValidationReport` is turned off because with it on a cdk-nag error aborts the
    synthesis, and the nag test could not list the findings it is there to show.
    """
    context = shipped_context()
    context |= {
        "aws:cdk:bundling-stacks": [],
        "@aws-cdk/core:annotationsInValidationReport": False,
    }
    return context | overrides


@pytest.fixture(scope="session")
def cdk_json_context() -> dict[str, Any]:
    return shipped_context()


@pytest.fixture(scope="session")
def synth_context() -> Callable[..., dict[str, Any]]:
    """`cdk_context`, for tests that build an app of their own."""
    return cdk_context


@pytest.fixture(scope="session")
def stacks() -> tuple[StatefulStack, StatelessStack]:
    from aws_cdk import App  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    from infra.app import build  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    return build(App(context=cdk_context(**FUNCTION_WORKER_CONTEXT)))


# AWS targets the workers may call (tests/infra/test_infra_target_grants.py), given to the
# `fargate_*` fixtures so that one synthesis checks both workers' grants.
TARGET_GRANTS_CONTEXT = {
    "lambdaTargets": "arn:aws:lambda:us-east-1:123456789012:function:report,"
    "arn:aws:lambda:us-east-1:123456789012:function:report:live",
    "stateMachineTargets": ["arn:aws:states:us-east-1:123456789012:stateMachine:orders"],
    "sigv4Targets": "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/POST/hooks/run,"
    "arn:aws:lambda:us-east-1:123456789012:function:webhook",
    "publishTargets": "arn:aws:sqs:us-east-1:123456789012:jobs,"
    "arn:aws:sns:us-east-1:123456789012:ops,arn:aws:events:us-east-1:123456789012:event-bus/ops",
    "oidcKeyArn": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "oidcIssuer": "https://takt.example",
    "notifyDefaults": {"acme": {"to": "arn:aws:sns:us-east-1:123456789012:ops", "on": ["dead"]}},
}
# The context the shared app adds to cdk.json's: the worker function serves every lane.
FUNCTION_WORKER_CONTEXT = {"fargateWorker": False}
# The context the `fargate_*` fixtures add to cdk.json's.
FARGATE_CONTEXT = {
    "fargateWorker": True,
    "fargateMaxTasks": 4,
    "signingSecretName": "takt/signing",
    **TARGET_GRANTS_CONTEXT,
}


@pytest.fixture(scope="session")
def fargate_stacks() -> tuple[StatefulStack, StatelessStack]:
    from aws_cdk import App  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    from infra.app import build  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    return build(App(context=cdk_context(**FARGATE_CONTEXT)))


@pytest.fixture(scope="session")
def fargate_stateless(fargate_stacks: tuple[StatefulStack, StatelessStack]) -> StatelessStack:
    return fargate_stacks[1]


@pytest.fixture(scope="session")
def fargate_template(fargate_stateless: StatelessStack) -> Template:
    from aws_cdk.assertions import Template  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    return Template.from_stack(fargate_stateless)


@pytest.fixture(scope="session")
def stateful(stacks: tuple[StatefulStack, StatelessStack]) -> StatefulStack:
    return stacks[0]


@pytest.fixture(scope="session")
def stateless(stacks: tuple[StatefulStack, StatelessStack]) -> StatelessStack:
    return stacks[1]


@pytest.fixture(scope="session")
def stateful_template(stateful: StatefulStack) -> Template:
    from aws_cdk.assertions import Template  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    return Template.from_stack(stateful)


@pytest.fixture(scope="session")
def stateless_template(stateless: StatelessStack) -> Template:
    from aws_cdk.assertions import Template  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    return Template.from_stack(stateless)


LogicalId = Callable[["Stack", "IConstruct"], str]


@pytest.fixture(scope="session")
def logical_id() -> LogicalId:
    """The CloudFormation logical id of an L2 construct's resource in `stack`."""
    from aws_cdk import CfnElement  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    def find(stack: Stack, construct: IConstruct) -> str:
        return stack.get_logical_id(cast(CfnElement, construct.node.default_child))

    return find


def output_resolver(stateful_template: Template) -> Callable[[Any], Any]:
    """Replace every reference to a stateful-stack output by the output's value.

    The stacks share values through outputs (`Fn::GetStackOutput`, or `Fn::ImportValue` with
    strong references); resolving them lets a test say "this is the Jobs table's name".
    """
    outputs: dict[str, Any] = stateful_template.to_json().get("Outputs", {})
    exports = {
        output["Export"]["Name"]: output["Value"]
        for output in outputs.values()
        if "Export" in output
    }

    def walk(value: Any) -> Any:
        if isinstance(value, list):
            return [walk(item) for item in value]
        if not isinstance(value, dict):
            return value
        if "Fn::GetStackOutput" in value:
            return outputs[value["Fn::GetStackOutput"]["OutputName"]]["Value"]
        if "Fn::ImportValue" in value:
            return exports[value["Fn::ImportValue"]]
        return {key: walk(item) for key, item in value.items()}

    return walk


@pytest.fixture(scope="session")
def resolve(stateful_template: Template) -> Callable[[Any], Any]:
    return output_resolver(stateful_template)


@pytest.fixture(scope="session")
def fargate_resolve(fargate_stacks: tuple[StatefulStack, StatelessStack]) -> Callable[[Any], Any]:
    from aws_cdk.assertions import Template  # noqa: PLC0415 - aws_cdk starts Node.js: only a synth pays it

    return output_resolver(Template.from_stack(fargate_stacks[0]))


@pytest.fixture(scope="session")
def cli_assemblies(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The cloud assembly of a `tests.infra.cli_synth.VARIANTS` variant, synthesized as the CDK
    CLI does, once per test process."""
    built: dict[str, Path] = {}

    def assembly(variant: str) -> Path:
        if variant not in built:
            built[variant] = synth_as_cli(
                VARIANTS[variant], tmp_path_factory.mktemp(f"cdk-{variant}")
            )
        return built[variant]

    return assembly
