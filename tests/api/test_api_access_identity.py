"""Identity mapping by configuration: JWT claims, scopes and groups, IAM principal patterns, and
the defaults; pure functions of the request context and the settings."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from takt.api.access import authorize
from takt.api.errors import ForbiddenError, UnauthenticatedError
from takt.api.identity import Identity, IdentityMapping, identity_of
from takt.config import IamPrincipal, Settings

ROLE_ARN = "arn:aws:iam::111122223333:role/takt-ops-admin"


def event_with(authorizer: dict[str, Any]) -> APIGatewayProxyEventV2:
    context = {"http": {"method": "GET", "path": "/v1/jobs"}, "authorizer": authorizer}
    return APIGatewayProxyEventV2({"version": "2.0", "requestContext": context})


def jwt(claims: dict[str, Any], scopes: list[str] | None = None) -> APIGatewayProxyEventV2:
    return event_with({"jwt": {"claims": claims, "scopes": scopes}})


def iam(arn: str, account: str = "111122223333") -> APIGatewayProxyEventV2:
    return event_with({"iam": {"accountId": account, "userArn": arn}})


def mapping(**settings: Any) -> IdentityMapping:
    return IdentityMapping.of(Settings(**settings))


def test_a_jwt_role_claim_naming_a_role_gives_that_role() -> None:
    found = identity_of(jwt({"tenant": "acme", "takt_role": "read", "sub": "u1"}), mapping())

    assert found == Identity("acme", "read", "u1")


def test_configured_claim_names_are_read() -> None:
    claims = {"org": "acme", "cognito:groups": ["staff", "takt-admins"], "sub": "u1"}

    found = identity_of(
        jwt(claims),
        mapping(
            tenant_claim="org", role_claim="cognito:groups", role_names={"takt-admins": "admin"}
        ),
    )

    assert (found.tenant, found.role) == ("acme", "admin")


def test_the_strongest_of_several_roles_wins() -> None:
    claims = {"tenant": "acme", "takt_role": "read write", "sub": "u1"}

    assert identity_of(jwt(claims), mapping()).role == "write"


def test_a_scope_gives_a_role() -> None:
    found = identity_of(
        jwt({"tenant": "acme", "sub": "u1"}, scopes=["takt/read"]),
        mapping(role_names={"takt/read": "read"}, jwt_default_role=None),
    )

    assert found.role == "read"


def test_a_jwt_without_a_role_gets_the_default_role() -> None:
    event = jwt({"tenant": "acme", "sub": "u1"})

    assert identity_of(event, mapping()).role == "write"
    assert identity_of(event, mapping(jwt_default_role=None)).role is None


def test_an_iam_principal_matching_a_pattern_gets_its_tenant_and_role() -> None:
    principals = [
        IamPrincipal(arn="arn:aws:iam::111122223333:role/takt-ops-*", tenant="ops", role="admin")
    ]

    found = identity_of(iam(ROLE_ARN), mapping(iam_principals=principals))

    assert found == Identity("ops", "admin", ROLE_ARN)


def test_an_assumed_role_session_matches_as_its_role() -> None:
    principals = [IamPrincipal(arn=ROLE_ARN, tenant="ops", role="read")]
    session = "arn:aws:sts::111122223333:assumed-role/takt-ops-admin/alice"

    found = identity_of(iam(session), mapping(iam_principals=principals))

    assert (found.tenant, found.role, found.principal) == ("ops", "read", session)


def test_an_unmatched_iam_caller_is_its_account_with_the_default_role() -> None:
    arn = "arn:aws:iam::444455556666:user/bob"

    found = identity_of(iam(arn, account="444455556666"), mapping(iam_default_role="read"))

    assert (found.tenant, found.role) == ("444455556666", "read")


@pytest.mark.parametrize("tenant", ["a#b", "has space", "x" * 129])
def test_a_tenant_id_that_could_pose_as_a_key_prefix_is_refused(tenant: str) -> None:
    with pytest.raises(UnauthenticatedError):
        identity_of(jwt({"tenant": tenant, "sub": "u1"}), mapping())


def test_the_tenant_never_comes_from_the_body() -> None:
    event = APIGatewayProxyEventV2(
        {
            **jwt({"tenant": "acme", "sub": "u1"}).raw_event,
            "body": '{"tenant": "other", "tenant_id": "other"}',
            "headers": {"takt-tenant-id": "other"},
        }
    )

    assert identity_of(event, mapping()).tenant == "acme"


@pytest.mark.parametrize(
    ("role", "method", "allowed"),
    [
        ("read", "GET", True),
        ("read", "HEAD", True),
        ("read", "POST", False),
        ("read", "DELETE", False),
        ("write", "PATCH", True),
        ("worker", "GET", False),
        ("admin", "PUT", True),
    ],
)
def test_the_route_check_is_by_method(role: str, method: str, allowed: bool) -> None:
    identity = Identity("acme", role, "u1")  # type: ignore[arg-type]

    if allowed:
        assert authorize(identity, method, {}).tenant == "acme"
    else:
        with pytest.raises(ForbiddenError):
            authorize(identity, method, {})


def test_settings_read_the_identity_mapping_from_json_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAKT_ROLE_NAMES", '{"ops": "admin"}')
    monkeypatch.setenv(
        "TAKT_IAM_PRINCIPALS", f'[{{"arn": "{ROLE_ARN}", "tenant": "ops", "role": "admin"}}]'
    )
    monkeypatch.setenv("TAKT_IAM_DEFAULT_ROLE", "null")

    settings = Settings()

    assert settings.role_names == {"ops": "admin"}
    assert settings.iam_principals[0].tenant == "ops"
    assert settings.iam_default_role is None
