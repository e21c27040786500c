"""Each tenant's API request rate, on every route: a token bucket shared by every API instance.

The API stage's throttle is one budget for the whole deployment, so a tenant sending as fast as
it can would take it from every other tenant. Each request therefore takes a token from its
caller's bucket (`<tenant>`, `api-rate`, in the tenants table, `api_per_sec` a second and
`api_burst` deep; takt.store.buckets), right after the access check and before the body is
read: past its rate a tenant gets 429 problem+json with Retry-After, and only it does.

The caller's own tenant pays, also when an admin acts for another one: the rate is about who
sends the requests. The bucket is exact across instances (one conditional `UpdateItem` per
request it grants: one write unit). A request it refuses usually costs nothing: an instance
that saw the bucket empty knows when the next token is due and refuses until then without a
write, so a flood of refused requests costs about one write per instance per token period.
"""

from __future__ import annotations

from takt.api.access import Caller
from takt.api.dependencies import Api
from takt.api.errors import TooManyRequestsError
from takt.tenants.limits import retry_after

REQUEST_BUCKET = "api-rate"


def take_request_token(api: Api, caller: Caller) -> None:
    """Spend one of the caller's tenant's request tokens (through that tenant's own DynamoDB
    session when deployed); TooManyRequestsError without one."""
    tenant_id = caller.identity.tenant
    limits = api.settings.limits_for(tenant_id)
    if limits.api_per_sec is None:
        return
    grant = api.tenant(tenant_id).buckets.take(
        tenant_id, REQUEST_BUCKET, 1, limits.api_per_sec, limits.api_burst, api.clock.now()
    )
    if not grant.granted:
        raise TooManyRequestsError(
            f"the tenant sends more than {limits.api_per_sec:g} API requests a second",
            [
                {
                    "field": "api_per_sec",
                    "message": f"the tenant's limit is {limits.api_per_sec:g} requests a second",
                }
            ],
            retry_after(grant.retry_after_sec),
        )
