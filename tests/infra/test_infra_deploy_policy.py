"""`python -m infra.deploy_policy` gives CloudFormation's execution role every action the handlers
of the templates' resource types call, in documents IAM accepts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from infra.deploy_policy import (
    ACTION,
    MAX_POLICY_CHARS,
    handler_actions,
    main,
    policy_documents,
    resource_types,
)


@pytest.mark.parametrize(
    ("variant", "needed"),
    [
        # Reads and deletes a hand-written list missed: a role's inline policies are listed
        # before it is deleted, a permission's policy and an event invoke config are read back.
        ("default", {"iam:ListRolePolicies", "lambda:GetPolicy", "sqs:ListQueueTags"}),
        ("default", {"cloudformation:DescribeStacks", "logs:CreateLogDelivery"}),
        # The e-mail subscription's handler reads its attributes back.
        ("alarm-email", {"sns:Subscribe", "sns:GetSubscriptionAttributes"}),
        # The default security group's custom resource is a Lambda function CloudFormation calls.
        ("fargate", {"lambda:InvokeFunction", "ecs:CreateService", "ec2:CreateNatGateway"}),
    ],
)
def test_the_policy_holds_what_the_templates_handlers_call(
    variant: str, needed: set[str], cli_assemblies: Callable[[str], Path]
) -> None:
    actions = handler_actions(resource_types(cli_assemblies(variant)))

    assert needed <= actions
    assert all(ACTION.fullmatch(action) for action in actions)


def test_each_document_fits_a_managed_policy_and_together_they_hold_every_action(
    cli_assemblies: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assembly = cli_assemblies("fargate")
    actions = handler_actions(resource_types(assembly))

    main(["deploy_policy", str(assembly)])

    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == policy_documents(actions)
    assert len(printed) >= 2  # the Fargate worker's actions take more than one document
    assert all(len(json.dumps(doc, separators=(",", ":"))) <= MAX_POLICY_CHARS for doc in printed)
    listed = [action for doc in printed for action in doc["Statement"][0]["Action"]]
    assert sorted(listed) == sorted(actions)
