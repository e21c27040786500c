"""`-c auth=jwt` swaps the API's IAM authorization for a JWT authorizer on every route."""

from __future__ import annotations

from typing import Any

from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from infra.api import JobApi
from infra.context import DeployConfig
from takt.config import TenantLimits

ISSUER = "https://issuer.example/"


def test_jwt_context_puts_a_jwt_authorizer_on_every_route(
    cdk_json_context: dict[str, Any],
) -> None:
    app = App(
        context=cdk_json_context | {"auth": "jwt", "jwtIssuer": ISSUER, "jwtAudience": "takt"}
    )
    stack = Stack(app, "JwtApi")
    handler = lambda_.Function(
        stack,
        "Handler",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
    )
    JobApi(stack, "Api", handler=handler, config=DeployConfig.from_context(app.node))
    template = Template.from_stack(stack)

    (authorizer,) = template.find_resources("AWS::ApiGatewayV2::Authorizer").values()
    routes = template.find_resources("AWS::ApiGatewayV2::Route").values()
    assert authorizer["Properties"]["AuthorizerType"] == "JWT"
    assert authorizer["Properties"]["JwtConfiguration"] == {
        "Issuer": ISSUER,
        "Audience": ["takt"],
    }
    assert len(routes) == 2
    assert all(route["Properties"]["AuthorizationType"] == "JWT" for route in routes)


def test_the_stage_throttle_holds_ten_tenants_at_their_request_rate(
    cdk_json_context: dict[str, Any],
) -> None:
    """The stage's throttle is one budget for every tenant; each tenant's own rate (checked in
    the function, takt.api.ratelimit) must leave most of it to the others."""
    tenant = TenantLimits()
    assert tenant.api_per_sec is not None

    assert cdk_json_context["apiRateLimit"] >= 10 * tenant.api_per_sec
    assert cdk_json_context["apiBurstLimit"] >= 10 * tenant.api_burst
