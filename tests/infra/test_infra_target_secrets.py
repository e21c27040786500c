"""What the deployed workers may reach: the secrets HTTP targets name (under the deployment's
prefix only, read by the workers only) and the egress allow list from context (empty unless
set)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template

from infra.context import ContextError, DeployConfig
from infra.functions import SPECS, TARGET_SECRET_PREFIX, WORKER
from infra.stateless import StatelessStack
from tests.infra.conftest import LogicalId


def _secret_reads(resources: dict[str, Any], role_id: str) -> list[str]:
    """The secrets a role may read, as their ARN's text (the parts CloudFormation joins)."""
    reads: list[str] = []
    for resource in resources.values():
        properties = resource["Properties"]
        if resource["Type"] != "AWS::IAM::Policy" or {"Ref": role_id} not in properties["Roles"]:
            continue
        for statement in properties["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            if "secretsmanager:GetSecretValue" in (
                [actions] if isinstance(actions, str) else actions
            ):
                reads.append(json.dumps(statement["Resource"]))
    return reads


def _role_id(stateless: StatelessStack, name: str, logical_id: LogicalId) -> str:
    role = stateless.functions.functions[name].role
    assert role is not None
    return logical_id(stateless, role)


def test_only_the_worker_may_read_target_secrets_and_only_under_the_prefix(
    stateless: StatelessStack, stateless_template: Template, logical_id: LogicalId
) -> None:
    resources = stateless_template.to_json()["Resources"]
    reads = {
        spec.name: _secret_reads(resources, _role_id(stateless, spec.name, logical_id))
        for spec in SPECS
    }

    assert TARGET_SECRET_PREFIX == "takt/"
    [worker] = reads.pop(WORKER.name)
    assert worker.endswith(':secret:takt/*"]]}')
    assert all(not r for r in reads.values())


def test_the_fargate_worker_reads_target_secrets_and_the_named_signing_secret(
    fargate_stateless: StatelessStack, fargate_template: Template, logical_id: LogicalId
) -> None:
    resources = fargate_template.to_json()["Resources"]
    worker = _secret_reads(resources, _role_id(fargate_stateless, WORKER.name, logical_id))
    service = fargate_stateless.fargate_worker
    assert service is not None
    task_role = service.service.task_definition.task_role
    fargate = _secret_reads(resources, logical_id(fargate_stateless, task_role))

    assert len(worker) == 2
    assert any(r.endswith(':secret:takt/*"]]}') for r in worker)
    assert any(r.endswith(':secret:takt/signing-??????"]]}') for r in worker)
    [target_secrets] = fargate
    assert target_secrets.endswith(':secret:takt/*"]]}')


def test_egress_allow_comes_from_context_and_is_empty_by_default(
    cdk_json_context: dict[str, Any],
) -> None:
    default = DeployConfig.from_context(App(context=cdk_json_context).node)
    given = DeployConfig.from_context(
        App(context=cdk_json_context | {"egressAllow": ["10.20.0.0/16", "hooks.internal"]}).node
    )

    assert default.egress_allow == ()
    assert given.egress_allow == ("10.20.0.0/16", "hooks.internal")


def test_a_bad_egress_allow_entry_stops_the_synth(cdk_json_context: dict[str, Any]) -> None:
    with pytest.raises(ContextError, match="egressAllow"):
        DeployConfig.from_context(
            App(context=cdk_json_context | {"egressAllow": "10.0.0.0/33"}).node
        )


def test_no_function_gets_an_egress_allow_list_by_default(
    stateless: StatelessStack, stateless_template: Template, logical_id: LogicalId
) -> None:
    resources = stateless_template.to_json()["Resources"]
    for spec in SPECS:
        function = stateless.functions.functions[spec.name]
        variables = resources[logical_id(stateless, function)]["Properties"]["Environment"][
            "Variables"
        ]
        assert "TAKT_EGRESS_ALLOW" not in variables
