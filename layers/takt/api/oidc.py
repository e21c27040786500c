"""takt's OIDC signing keys, for receivers of HTTP targets with `auth.oidc` to verify tokens with.

The keys are public by nature; the route is behind the API's authentication like every other
(any role that may read), so a receiver fetches the JWKS once with credentials, or an operator
publishes the document where receivers fetch it (docs/SECURITY.md, "OIDC tokens").
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, Field

from takt.api.errors import ConflictingStateError
from takt.api.routing import api_of, json_response, responses
from takt.targets.http import TokenError


class JwkOut(BaseModel):
    kty: str = Field(description="RSA")
    alg: str = Field(description="RS256")
    use: str = Field(description="sig")
    kid: str = Field(description="the key's RFC 7638 thumbprint, as tokens name it")
    n: str = Field(description="modulus, base64url")
    e: str = Field(description="exponent, base64url")


class JwksOut(BaseModel):
    keys: list[JwkOut]


router = Router()  # type: ignore[no-untyped-call]


@router.get(
    "/v1/oidc/jwks",
    responses=responses({200: "The JSON Web Key Set that verifies takt's OIDC tokens"}, 409),
)
def oidc_jwks() -> Response[JwksOut]:
    signer = api_of(router).oidc
    if signer is None:
        raise ConflictingStateError("this deployment signs no OIDC tokens (no oidc_key_id)")
    try:
        jwks = JwksOut.model_validate(signer.jwks())
    except TokenError as exc:
        raise ConflictingStateError(f"the OIDC key cannot be read: {exc}") from exc
    return json_response(jwks)
