"""The AWS targets and notification destinations a deployment names in its context, and only
those, may be called by the workers (the function and the Fargate task) and, for notifications,
the watchdog: no grant by default, no wildcard ever."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from aws_cdk import App
from pydantic import TypeAdapter

from infra.context import ContextError, DeployConfig
from infra.functions import API, SPECS, WATCHDOG, WORKER
from takt.models.notify import NotifyPolicy
from tests.infra.conftest import TARGET_GRANTS_CONTEXT, LogicalId

if TYPE_CHECKING:
    from aws_cdk.assertions import Template

    from infra.stateless import StatelessStack

FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:report"
ALIAS = "arn:aws:lambda:us-east-1:123456789012:function:report:live"
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"
ROUTE = "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/POST/hooks/run"
URL_FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:webhook"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:jobs"
TOPIC = "arn:aws:sns:us-east-1:123456789012:ops"
BUS = "arn:aws:events:us-east-1:123456789012:event-bus/ops"
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
TARGET_ACTIONS = {
    "lambda:InvokeFunction",
    "states:StartExecution",
    "execute-api:Invoke",
    "lambda:InvokeFunctionUrl",
    "sqs:SendMessage",
    "sqs:GetQueueUrl",
    "sns:Publish",
    "events:PutEvents",
    "kms:Sign",
    "kms:GetPublicKey",
}


def _calls(template: Template, role_id: str) -> set[tuple[str, str]]:
    """(action, ARN) pairs of the target actions a role's policies allow on literal ARNs: the
    context's targets (takt's own functions, which the scheduler invokes, are references)."""
    found = set()
    for resource in template.to_json()["Resources"].values():
        properties = resource["Properties"]
        if resource["Type"] != "AWS::IAM::Policy" or {"Ref": role_id} not in properties["Roles"]:
            continue
        for statement in properties["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            resources = statement["Resource"]
            for action in [actions] if isinstance(actions, str) else actions:
                for arn in resources if isinstance(resources, list) else [resources]:
                    if action in TARGET_ACTIONS and isinstance(arn, str):
                        found.add((action, arn))
    return found


def _role_ids(stateless: StatelessStack, logical_id: LogicalId) -> dict[str, str]:
    ids = {}
    for spec in SPECS:
        role = stateless.functions.functions[spec.name].role
        assert role is not None
        ids[spec.name] = logical_id(stateless, role)
    if stateless.fargate_worker is not None:
        task_role = stateless.fargate_worker.service.task_definition.task_role
        ids["fargate"] = logical_id(stateless, task_role)
    return ids


def test_the_workers_may_call_exactly_the_listed_targets_and_nothing_else_may(
    fargate_stateless: StatelessStack, fargate_template: Template, logical_id: LogicalId
) -> None:
    stateless, template = fargate_stateless, fargate_template
    assert TARGET_GRANTS_CONTEXT["stateMachineTargets"] == [MACHINE]
    expected = {
        ("lambda:InvokeFunction", FUNCTION),
        ("lambda:InvokeFunction", ALIAS),
        ("states:StartExecution", MACHINE),
        ("execute-api:Invoke", ROUTE),
        ("lambda:InvokeFunctionUrl", URL_FUNCTION),
        ("sqs:SendMessage", QUEUE),
        ("sqs:GetQueueUrl", QUEUE),
        ("sns:Publish", TOPIC),
        ("events:PutEvents", BUS),
        ("kms:Sign", KEY),
        ("kms:GetPublicKey", KEY),
    }

    calls = {
        name: _calls(template, role) for name, role in _role_ids(stateless, logical_id).items()
    }

    assert calls.pop(WORKER.name) == expected
    assert calls.pop("fargate") == expected
    # The watchdog ends executions whose worker died, and notifies as the worker would.
    assert calls.pop(WATCHDOG.name) == {("sns:Publish", TOPIC), ("events:PutEvents", BUS)}
    # The API serves the JWKS: the key's public half, never a signature.
    assert calls.pop(API.name) == {("kms:GetPublicKey", KEY)}
    assert all(not found for found in calls.values())


def test_the_shipped_context_grants_no_target_call(
    stateless: StatelessStack, stateless_template: Template, logical_id: LogicalId
) -> None:
    for role in _role_ids(stateless, logical_id).values():
        assert _calls(stateless_template, role) == set()


@pytest.mark.parametrize(
    ("knob", "value", "message"),
    [
        ("lambdaTargets", "arn:aws:lambda:us-east-1:123456789012:function:*", "wildcard"),
        ("lambdaTargets", MACHINE, "'lambdaTargets' .* is not a function ARN"),
        ("stateMachineTargets", FUNCTION, "'stateMachineTargets' .* is not a state machine"),
        (
            "sigv4Targets",
            "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/*/hooks",
            "'sigv4Targets' .* holds a wildcard",
        ),
        ("sigv4Targets", "arn:aws:execute-api:us-east-1:123456789012:abc123", "neither"),
        ("publishTargets", FUNCTION, "'publishTargets' .* is not an SQS queue, SNS topic"),
        ("publishTargets", "arn:aws:sns:us-east-1:123456789012:*", "holds a wildcard"),
        ("oidcKeyArn", "arn:aws:kms:us-east-1:123456789012:alias/takt", "not a KMS key ARN"),
    ],
)
def test_a_bad_target_grant_stops_the_synth_naming_the_knob(
    cdk_json_context: dict[str, Any], knob: str, value: str, message: str
) -> None:
    with pytest.raises(ContextError, match=message):
        DeployConfig.from_context(App(context=cdk_json_context | {knob: value}).node)


def test_the_tenants_default_notification_policies_reach_every_function_as_settings_read_them(
    fargate_stateless: StatelessStack, fargate_template: Template, logical_id: LogicalId
) -> None:
    resources = fargate_template.to_json()["Resources"]
    function = fargate_stateless.functions.functions[WATCHDOG.name]
    variables = resources[logical_id(fargate_stateless, function)]["Properties"]["Environment"][
        "Variables"
    ]

    # As Settings reads it from the environment: JSON, each policy checked.
    defaults = TypeAdapter(dict[str, NotifyPolicy]).validate_json(variables["TAKT_NOTIFY_DEFAULTS"])
    assert defaults["acme"].to == TOPIC
    assert defaults["acme"].on == ["dead"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"acme": {"to": "handler:page"}}', "notifyDefaults.acme.to"),
        ('{"acme": {"to": "https://ops.example/h", "after_failures": 0}}', "after_failures"),
        ("not json", "must be a JSON object"),
        (
            {f"tenant-{i}": {"to": "https://ops.example/hook"} for i in range(40)},
            "more than 1024",
        ),
    ],
)
def test_a_bad_notify_default_stops_the_synth(
    cdk_json_context: dict[str, Any], value: object, message: str
) -> None:
    with pytest.raises(ContextError, match=message):
        DeployConfig.from_context(App(context=cdk_json_context | {"notifyDefaults": value}).node)


def test_the_workers_and_the_api_are_told_the_oidc_key_and_issuer(
    fargate_stateless: StatelessStack, fargate_template: Template, logical_id: LogicalId
) -> None:
    resources = fargate_template.to_json()["Resources"]
    for spec in (WORKER, API):
        function = fargate_stateless.functions.functions[spec.name]
        variables = resources[logical_id(fargate_stateless, function)]["Properties"]["Environment"][
            "Variables"
        ]
        assert variables["TAKT_OIDC_KEY_ID"] == KEY
        assert variables["TAKT_OIDC_ISSUER"] == "https://takt.example"
