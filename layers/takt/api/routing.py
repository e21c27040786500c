"""What every route module of the API shares: the request's `Api`, caller and tenant, read from
the resolver's context, and the documented problem answers.

Each group of routes is a Powertools `Router` (takt.api.runs, calendars, backfills, ...) that
`takt.api.app` includes; a router's context is the resolver's once included, so these helpers
serve the app's own routes and every router's alike.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

from takt.api.access import Caller
from takt.api.dependencies import Api
from takt.api.errors import UnauthenticatedError
from takt.api.models import Problem

PROBLEM_JSON = "application/problem+json"

_PROBLEMS: dict[int, str] = {
    400: "Invalid request: `errors[].field` names each field at fault",
    401: "No caller identity, or no tenant claim in it",
    403: "The caller's role does not allow this method (read: GET only; worker: nothing)",
    404: "No such job or execution for this caller",
    409: "Conflict: the execution's state does not allow this, or the job name is taken "
    "(names are unique among a tenant's jobs)",
    410: "The idempotency key's job was created and has since been deleted",
    412: "If-Match names an older version of the job",
    413: "Payload or request body too large",
    415: "The body is not application/json",
    422: "Idempotency key reused with a different body",
    429: "A limit of the tenant is reached (request rate, jobs stored, creation rate); see "
    "Retry-After",
    503: "Across regions: no region holds the region lease, or the holder's replica cannot be "
    "reached; the job is unchanged. See Retry-After",
}


def responses(success: dict[int, str], *problems: int) -> dict[int, Any]:
    """The documented answers of a route: its successes (schema from the return type) and its
    problem+json errors. Every route lists its success codes: once `responses` is given,
    Powertools documents no success answer by itself."""
    documented: dict[int, Any] = {code: {"description": text} for code, text in success.items()}
    # Every route: the access check, then the tenant's request rate (429), come first.
    for code in (400, 401, 403, 429, *problems):
        documented[code] = {
            "description": _PROBLEMS[code],
            "content": {PROBLEM_JSON: {"model": Problem}},
        }
    return documented


def api_of(router: BaseRouter) -> Api:
    """The `Api` the handler passed with this request (`takt.api.app.handle`)."""
    api: Api = router.context["api"]
    return api


def caller_of(router: BaseRouter) -> Caller:
    """Who calls, as the access middleware found it."""
    caller = router.context.get("caller")
    if not isinstance(caller, Caller):
        raise UnauthenticatedError("no caller identity on the request")
    return caller


def tenant_of(router: BaseRouter) -> str:
    """The tenant the request acts for: the caller's own, or the one an admin named."""
    return caller_of(router).tenant


def json_response(body: Any, status: int = 200) -> Response[Any]:
    """A JSON answer; `body` is the model, not its JSON text: Powertools validates a response
    body against the route's declared return type before serializing it, and JSON text fails
    that check."""
    return Response(status_code=status, content_type="application/json", body=body)
