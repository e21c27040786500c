"""The policy CloudFormation's execution role needs for takt's templates, derived from them.

Every resource type in the synthesized templates has a CloudFormation registry schema whose
handlers list the IAM actions CloudFormation calls to create, read, update and delete it (cfn-lint
ships those schemas, so no AWS call is needed). The union over the templates' types is what a
deployment, an update and a `cdk destroy` may call; a hand-written list misses the reads and tag
calls a handler makes after a create (`sns:GetSubscriptionAttributes` for the e-mail
subscription, `iam:ListRolePolicies` before a role is deleted).

`python -m infra.deploy_policy [cdk.out]` prints the policy documents after `make synth`, each
under IAM's 6,144-character limit for a managed policy; docs/DEPLOY.md says how to bootstrap with
them.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# IAM's limit on a managed policy document, counted without white space.
MAX_POLICY_CHARS = 6144
# An IAM action's form; a schema's odd entry (`s3:REST.PUT.OBJECT`, an S3 log event's name) is
# not one, and IAM would refuse the policy that holds it.
ACTION = re.compile(r"[a-z0-9-]+:[A-Za-z0-9]+")
# What CloudFormation itself calls beyond the resources' handlers: `Fn::GetStackOutput` in
# TaktStateless reads the stateful stack's outputs, and a Lambda-backed custom resource (the
# VPC's default security group) is invoked by CloudFormation.
STACK_OUTPUTS = "cloudformation:DescribeStacks"
CUSTOM_RESOURCE = "lambda:InvokeFunction"


def resource_types(assembly: Path) -> set[str]:
    """Every resource type in the assembly's templates."""
    return {
        resource["Type"]
        for path in sorted(assembly.glob("*.template.json"))
        for resource in json.loads(path.read_text())["Resources"].values()
    }


def handler_actions(types: Iterable[str], region: str = "us-east-1") -> set[str]:
    """The actions the registry schemas' handlers list for `types`, plus CloudFormation's own.

    A type with no schema (CDK's metadata, a custom resource) has no handler: custom resources
    add the Lambda invocation instead.
    """
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER  # noqa: PLC0415 - cfn-lint is slow to import

    actions = {STACK_OUTPUTS}
    for type_name in types:
        if type_name.startswith("Custom::"):
            actions.add(CUSTOM_RESOURCE)
            continue
        if type_name == "AWS::CDK::Metadata":
            continue
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, type_name).schema
        handlers: dict[str, Any] = schema.get("handlers", {})
        for verb in ("create", "read", "update", "delete"):
            actions.update(handlers.get(verb, {}).get("permissions", []))
    # Schemas spell one action in two cases (`s3:getObject`); IAM's actions are case-insensitive.
    by_lower = {
        action.lower(): action
        for action in sorted(actions, reverse=True)
        if ACTION.fullmatch(action)
    }
    return set(by_lower.values())


def policy_documents(actions: Iterable[str]) -> list[dict[str, Any]]:
    """The actions as few Allow policies as IAM's size limit permits, services kept whole."""
    by_service: dict[str, list[str]] = {}
    for action in sorted(actions):
        by_service.setdefault(action.split(":")[0], []).append(action)
    documents: list[list[str]] = [[]]
    for service_actions in by_service.values():
        if _size([*documents[-1], *service_actions]) > MAX_POLICY_CHARS:
            documents.append([])
        documents[-1].extend(service_actions)
    return [_document(listed) for listed in documents if listed]


def _document(actions: list[str]) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}],
    }


def _size(actions: list[str]) -> int:
    return len(json.dumps(_document(actions), separators=(",", ":")))


def main(argv: list[str]) -> None:
    """Print one policy document a line for the templates in a cdk.out directory."""
    assembly = Path(argv[1] if len(argv) > 1 else "cdk.out")
    for document in policy_documents(handler_actions(resource_types(assembly))):
        print(json.dumps(document, separators=(",", ":")))


if __name__ == "__main__":
    main(sys.argv)
