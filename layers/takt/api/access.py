"""Roles, and the one access check every route of the API passes.

The check is by method, not by route, so a route added later is covered without doing anything:
GET and HEAD need the right to read, every other method the right to write. Which tenant a call
acts for is decided here too: the caller's own, or, for an admin only, the tenant named by the
`Takt-Tenant` header (each such call is logged once as an audit line, by `audit`). The stores
then answer another tenant's ids as absent (404), because every key they read starts with the
acting tenant.

| role | read (GET, HEAD) | write (other methods) | act for another tenant |
|---|---|---|---|
| admin | yes | yes | yes |
| write | yes | yes | no |
| read | yes | no | no |
| worker | no | no | no |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from takt.api.errors import ForbiddenError, InvalidRequestError
from takt.api.identity import Identity, is_tenant_id
from takt.config import Role
from takt.observability import audit_logger

Right = Literal["read", "write", "act_for_tenant"]

RIGHTS: Mapping[Role, frozenset[Right]] = {
    "admin": frozenset({"read", "write", "act_for_tenant"}),
    "write": frozenset({"read", "write"}),
    "read": frozenset({"read"}),
    # A worker leases executions from the lanes; the job API is not its business.
    "worker": frozenset(),
}
READ_METHODS = frozenset({"GET", "HEAD"})
# The header an admin names the tenant it acts for with (HTTP API lower-cases header names).
ACT_FOR_HEADER = "takt-tenant"


@dataclass(frozen=True)
class Caller:
    """Who calls (`identity`) and the tenant the call reads and writes (`tenant`)."""

    identity: Identity
    tenant: str

    @property
    def acting_for_other(self) -> bool:
        return self.tenant != self.identity.tenant


def required_right(method: str) -> Right:
    return "read" if method.upper() in READ_METHODS else "write"


def authorize(identity: Identity, method: str, headers: Mapping[str, str]) -> Caller:
    """The caller of a request with `method`; ForbiddenError when its role does not allow it."""
    if identity.role is None:
        raise ForbiddenError("the caller's identity maps to no role in this deployment")
    rights = RIGHTS[identity.role]
    needed = required_right(method)
    if needed not in rights:
        raise ForbiddenError(f"the {identity.role} role may not {needed} through the job API")
    named = headers.get(ACT_FOR_HEADER)
    if named is None or named == identity.tenant:
        return Caller(identity, identity.tenant)
    if "act_for_tenant" not in rights:
        raise ForbiddenError(
            f"only an admin may act for another tenant ({ACT_FOR_HEADER} header)",
            [{"field": "Takt-Tenant", "message": "only an admin may name another tenant"}],
        )
    if not is_tenant_id(named):
        raise InvalidRequestError(
            "Takt-Tenant must name a tenant",
            [{"field": "Takt-Tenant", "message": "not a tenant id"}],
        )
    return Caller(identity, named)


def audit(caller: Caller, method: str) -> None:
    """The audit line of a call made for another tenant, at a level no log setting drops."""
    if caller.acting_for_other:
        audit_logger.critical(
            "admin acting for another tenant",
            audit=True,
            principal=caller.identity.principal,
            own_tenant=caller.identity.tenant,
            acting_for=caller.tenant,
            method=method.upper(),
        )
