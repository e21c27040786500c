"""The tenant comes from the caller's verified identity, never from the request body."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from takt.api.errors import UnauthenticatedError
from takt.api.identity import tenant_of


def event_with(authorizer: dict[str, Any] | None) -> APIGatewayProxyEventV2:
    context: dict[str, Any] = {"http": {"method": "GET", "path": "/v1/jobs"}}
    if authorizer is not None:
        context["authorizer"] = authorizer
    return APIGatewayProxyEventV2({"version": "2.0", "requestContext": context})


def test_tenant_is_the_configured_jwt_claim() -> None:
    event = event_with({"jwt": {"claims": {"sub": "user-1", "org": "acme"}, "scopes": None}})

    assert tenant_of(event, "org") == "acme"


def test_jwt_without_the_tenant_claim_is_unauthenticated() -> None:
    event = event_with({"jwt": {"claims": {"sub": "user-1"}, "scopes": None}})

    with pytest.raises(UnauthenticatedError, match="'tenant'"):
        tenant_of(event, "tenant")


def test_iam_caller_is_its_account() -> None:
    event = event_with({"iam": {"accountId": "123456789012", "userArn": "arn:aws:iam::1:user/x"}})

    assert tenant_of(event, "tenant") == "123456789012"


@pytest.mark.parametrize("authorizer", [None, {}, {"jwt": {"claims": {}}}, {"iam": {}}])
def test_request_without_identity_is_unauthenticated(authorizer: dict[str, Any] | None) -> None:
    with pytest.raises(UnauthenticatedError):
        tenant_of(event_with(authorizer), "tenant")


def test_unauthenticated_maps_to_401() -> None:
    assert UnauthenticatedError("x").status == 401
