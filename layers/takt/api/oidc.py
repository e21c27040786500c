"""takt's OIDC signing keys, for receivers of HTTP targets with `auth.oidc` to verify tokens with.

The keys are public by nature; the route is behind the API's authentication like every other
(any role that may read), so a receiver fetches the JWKS once with credentials, or an operator
publishes the document where receivers fetch it (docs/SECURITY.md, "OIDC tokens").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from pydantic import BaseModel, Field

from takt.api.errors import ConflictingStateError
from takt.targets.http import TokenError
from takt.wiring import Services


class JwkOut(BaseModel):
    kty: str = Field(description="RSA")
    alg: str = Field(description="RS256")
    use: str = Field(description="sig")
    kid: str = Field(description="the key's RFC 7638 thumbprint, as tokens name it")
    n: str = Field(description="modulus, base64url")
    e: str = Field(description="exponent, base64url")


class JwksOut(BaseModel):
    keys: list[JwkOut]


def register(
    app: APIGatewayHttpResolver,
    services: Callable[[], Services],
    responses: Callable[..., dict[int, Any]],
) -> None:
    @app.get(
        "/v1/oidc/jwks",
        responses=responses({200: "The JSON Web Key Set that verifies takt's OIDC tokens"}, 409),
    )
    def oidc_jwks() -> Response[JwksOut]:
        signer = services().oidc
        if signer is None:
            raise ConflictingStateError("this deployment signs no OIDC tokens (no oidc_key_id)")
        try:
            jwks = JwksOut.model_validate(signer.jwks())
        except TokenError as exc:
            raise ConflictingStateError(f"the OIDC key cannot be read: {exc}") from exc
        return Response(status_code=200, content_type="application/json", body=jwks)
