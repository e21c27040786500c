"""Who is calling: tenant and role come from the caller's verified identity, never from the body.

API Gateway has already verified the caller (IAM SigV4 or a JWT authorizer) before the function
runs; this module only reads what the authorizer put in the request context and maps it with the
deployment's configuration (`IdentityMapping`, from `Settings`):

- a JWT caller's tenant is the claim `tenant_claim`; its role is the first that one of its role
  sources names, strongest first: the claim `role_claim` (a role name, a group name, or a list of
  either, as Cognito's `cognito:groups` is), then its scopes, each looked up in `role_names`
  (a role's own name always maps to itself); without any, `jwt_default_role`;
- an IAM caller is matched by its principal ARN against `iam_principals` (patterns with `*`,
  first match wins; an assumed-role session is matched as its role's ARN too); with no match its
  tenant is its AWS account and its role `iam_default_role`.

A caller the mapping gives no role has an identity but no rights (403), so a deployment can
require an explicit grant by setting the default roles to null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from takt.api.errors import UnauthenticatedError
from takt.config import IamPrincipal, Role, Settings

# Strongest first: a caller with several roles gets the strongest one.
ROLE_ORDER: tuple[Role, ...] = ("admin", "write", "read", "worker")
# arn:aws:sts::<account>:assumed-role/<role name>/<session>
_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d+):assumed-role/(?P<role>[^/]+)/"
)
# A tenant id is what an IAM session tag value may hold (letters, digits and `_.:/=+-@`), as the
# deployed API scopes each request's DynamoDB session to its tenant with such a tag, less the
# characters IAM's `StringLike` reads as wildcards or policy variables (`*`, `?`, `$`, `{`), none
# of which the tag allows anyway, and `#`, which separates the tenant from the rest of each key
# (`<tenant>#...`) and so could make one tenant's id a prefix of another's keys.
TENANT_PATTERN = r"^[A-Za-z0-9_.:/=+@-]{1,128}$"
_TENANT = re.compile(TENANT_PATTERN)


@dataclass(frozen=True)
class IdentityMapping:
    """How verified callers map to (tenant, role); read from `Settings`."""

    tenant_claim: str = "tenant"
    role_claim: str = "takt_role"
    role_names: tuple[tuple[str, Role], ...] = ()
    jwt_default_role: Role | None = "write"
    iam_principals: tuple[IamPrincipal, ...] = ()
    iam_default_role: Role | None = "write"

    @classmethod
    def of(cls, settings: Settings) -> IdentityMapping:
        return cls(
            tenant_claim=settings.tenant_claim,
            role_claim=settings.role_claim,
            role_names=tuple(settings.role_names.items()),
            jwt_default_role=settings.jwt_default_role,
            iam_principals=tuple(settings.iam_principals),
            iam_default_role=settings.iam_default_role,
        )

    def role_of_name(self, name: str) -> Role | None:
        for known, role in self.role_names:
            if known == name:
                return role
        return name if name in ROLE_ORDER else None


@dataclass(frozen=True)
class Identity:
    """A verified caller: its own tenant, its role (None: no rights), and who it is, for logs."""

    tenant: str
    role: Role | None
    principal: str


def identity_of(event: APIGatewayProxyEventV2, mapping: IdentityMapping) -> Identity:
    """The caller's identity; UnauthenticatedError when the request carries none."""
    context: Any = event.get("requestContext") or {}
    authorizer: Any = context.get("authorizer") or {}
    jwt = authorizer.get("jwt") or {}
    claims = jwt.get("claims") or {}
    if claims:
        return _checked(_jwt_identity(claims, jwt.get("scopes") or [], mapping))
    iam = authorizer.get("iam") or {}
    if iam.get("accountId"):
        return _checked(_iam_identity(iam, mapping))
    raise UnauthenticatedError("no caller identity on the request")


def is_tenant_id(value: str) -> bool:
    return bool(_TENANT.match(value))


def _checked(identity: Identity) -> Identity:
    if not is_tenant_id(identity.tenant):
        raise UnauthenticatedError("the caller's tenant id is not a valid tenant id")
    return identity


def tenant_of(event: APIGatewayProxyEventV2, claim: str) -> str:
    """The caller's own tenant under the default mapping with `claim` naming the tenant."""
    return identity_of(event, IdentityMapping(tenant_claim=claim)).tenant


def _jwt_identity(claims: dict[str, Any], scopes: list[Any], mapping: IdentityMapping) -> Identity:
    tenant = claims.get(mapping.tenant_claim)
    if not tenant:
        raise UnauthenticatedError(f"the token has no {mapping.tenant_claim!r} claim")
    named = _names(claims.get(mapping.role_claim)) + [str(s) for s in scopes]
    roles = [r for r in (mapping.role_of_name(name) for name in named) if r is not None]
    role = _strongest(roles) if roles else mapping.jwt_default_role
    return Identity(str(tenant), role, str(claims.get("sub") or "jwt"))


def _names(value: Any) -> list[str]:
    """A claim's role names: one string, a space- or comma-separated list, or a JSON array."""
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str):
        text = value.strip().strip("[]")
        return [part.strip().strip('"') for part in re.split(r"[\s,]+", text) if part.strip()]
    return []


def _iam_identity(iam: dict[str, Any], mapping: IdentityMapping) -> Identity:
    arn = str(iam.get("userArn") or "")
    candidates = [arn]
    assumed = _ASSUMED_ROLE.match(arn)
    if assumed:
        candidates.append(
            f"arn:{assumed['partition']}:iam::{assumed['account']}:role/{assumed['role']}"
        )
    for principal in mapping.iam_principals:
        if any(fnmatchcase(candidate, principal.arn) for candidate in candidates):
            return Identity(principal.tenant, principal.role, arn)
    return Identity(str(iam["accountId"]), mapping.iam_default_role, arn or str(iam["accountId"]))


def _strongest(roles: list[Role]) -> Role:
    return min(roles, key=ROLE_ORDER.index)
