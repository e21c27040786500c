"""The API's per-tenant sessions: with `tenant_data_role_arn` set, each tenant's DynamoDB calls
are signed with the credentials of its own tagged session of the tenant-data role (IAM's
`dynamodb:LeadingKeys` then confines them; moto does not evaluate policies, so these tests check
whose credentials sign each call, and the synthesized policy is tested in tests/infra)."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest

from takt.aws import AwsClients
from takt.clock import ManualClock
from takt.config import Settings
from takt.tenants.sessions import MAX_TENANT_SESSIONS, session_name
from takt.wiring import Services, install
from tests.api.harness import OTHER_TENANT, TENANT, Api

TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
}
CREDENTIAL = re.compile(r"Credential=([A-Z0-9]+)/")


@pytest.fixture
def role_arn(moto_endpoint: str) -> str:
    iam = boto3.session.Session(region_name="us-east-1").client("iam", endpoint_url=moto_endpoint)
    name = f"tenant-data-{id(iam)}"
    return str(
        iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    )


@pytest.fixture
def scoped(
    settings: Settings, clock: ManualClock, aws_clients: AwsClients, role_arn: str
) -> Services:
    return Services(
        settings=settings.model_copy(update={"tenant_data_role_arn": role_arn}),
        clients=aws_clients,
        clock=clock,
    )


def _signing_keys(dynamodb: Any) -> list[str]:
    """The access key ids that sign the calls of the DynamoDB client `dynamodb` from now on."""
    keys: list[str] = []

    def capture(request: Any, **_: Any) -> None:
        header = request.headers.get("Authorization", "")
        match = CREDENTIAL.search(header.decode() if isinstance(header, bytes) else header)
        if match:
            keys.append(match[1])

    dynamodb.meta.events.register("before-send.dynamodb", capture)
    return keys


def test_without_a_role_the_api_uses_its_own_client_for_every_tenant(svc: Services) -> None:
    assert svc.api.tenant(TENANT) is svc.api.tenant(OTHER_TENANT)
    assert svc.api.tenant(TENANT).executions.client is svc.clients.dynamodb


def test_each_tenant_gets_its_own_session_reused_until_it_is_due_for_renewal(
    scoped: Services, clock: ManualClock
) -> None:
    first = scoped.api.tenant(TENANT)
    other = scoped.api.tenant(OTHER_TENANT)

    assert first.executions.client is not scoped.clients.dynamodb
    assert scoped.api.tenant(TENANT) is first
    assert other.executions.client is not first.executions.client

    clock.advance(56 * 60)
    assert scoped.api.tenant(TENANT) is not first


def test_a_tenants_requests_are_signed_by_its_session_not_the_functions_role(
    scoped: Services,
) -> None:
    install(scoped)
    try:
        api = Api(scoped)
        own_keys = _signing_keys(scoped.clients.dynamodb)
        tenant_keys = _signing_keys(scoped.api.tenant(TENANT).executions.client)
        other_keys = _signing_keys(scoped.api.tenant(OTHER_TENANT).executions.client)

        job = api.created_job({"schedule": "0 3 * * *", "target": "https://svc.example/hook"})
        assert api.request("GET", f"/v1/jobs/{job['id']}").status == 200
        assert api.request("GET", f"/v1/jobs/{job['id']}", tenant=OTHER_TENANT).status == 404
    finally:
        install(None)

    assert own_keys == []
    assert tenant_keys and other_keys
    assert set(tenant_keys).isdisjoint(other_keys)


def test_session_names_show_the_tenant_within_stss_rules() -> None:
    assert session_name("acme") == "takt-api-acme"
    name = session_name("a/b:c" + "x" * 80)
    assert re.fullmatch(r"[\w+=,.@-]{2,64}", name)
    assert name.startswith("takt-api-a-b-c")


def test_an_instance_keeps_the_sessions_of_its_most_recent_tenants_only(scoped: Services) -> None:
    seen = {f"tenant-{i}": scoped.api.tenant(f"tenant-{i}") for i in range(MAX_TENANT_SESSIONS)}
    assert scoped.api.tenant("tenant-0") is seen["tenant-0"]  # used again: now the most recent

    scoped.api.tenant("one-more")  # evicts tenant-1, the least recently used

    assert scoped.api.tenant("tenant-0") is seen["tenant-0"]
    assert scoped.api.tenant("tenant-2") is seen["tenant-2"]
    assert scoped.api.tenant("tenant-1") is not seen["tenant-1"]  # a new session
