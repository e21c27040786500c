"""Who is calling: the tenant comes from the caller's verified identity, never from the body.

API Gateway has already verified the caller (IAM SigV4 or a JWT authorizer) before the function
runs; this module only reads what the authorizer put in the request context.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from takt.api.errors import UnauthenticatedError


def tenant_of(event: APIGatewayProxyEventV2, claim: str) -> str:
    """The tenant: the configured JWT claim, or the AWS account of an IAM caller."""
    context: Any = event.get("requestContext") or {}
    authorizer: Any = context.get("authorizer") or {}
    jwt = authorizer.get("jwt") or {}
    claims = jwt.get("claims") or {}
    if claims:
        tenant = claims.get(claim)
        if not tenant:
            raise UnauthenticatedError(f"the token has no {claim!r} claim")
        return str(tenant)
    iam = authorizer.get("iam") or {}
    if iam.get("accountId"):
        return str(iam["accountId"])
    raise UnauthenticatedError("no caller identity on the request")
