"""The calendar routes: a tenant's named calendars of blackout windows and holidays.

`PUT /v1/calendars/{name}` creates or replaces one; jobs name calendars in `calendars`, and the
claimer records each occurrence inside a window as skipped (takt.calendars). `register` adds the
routes with the API's own helpers, as takt.api.runs does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from pydantic import BaseModel

from takt.api.errors import InvalidRequestError, JobNotFoundError
from takt.calendars import Calendar, CalendarBody
from takt.calendars.store import MAX_CALENDARS
from takt.store.errors import NotFoundError
from takt.wiring import Services

NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"


class CalendarPage(BaseModel):
    items: list[Calendar]


def register(
    app: APIGatewayHttpResolver,
    tenant: Callable[[], str],
    services: Callable[[], Services],
    responses: Callable[..., dict[int, Any]],
    require_json: Callable[[], None],
) -> None:
    """Add the calendar routes to `app`."""

    @app.put(
        "/v1/calendars/<name>",
        responses=responses({200: "The calendar as stored, its version counting writes"}, 413, 415),
    )
    def put_calendar(
        name: Annotated[str, Path(pattern=NAME_PATTERN)], body: Annotated[CalendarBody, Body()]
    ) -> Response[Calendar]:
        require_json()
        svc, tenant_id = services(), tenant()
        known = {c.name for c in svc.calendars.list(tenant_id)}
        if name not in known and len(known) >= MAX_CALENDARS:
            message = f"a tenant has at most {MAX_CALENDARS} calendars"
            raise InvalidRequestError(message, [{"field": "name", "message": message}])
        stored = svc.calendars.put(tenant_id, name, body, svc.clock.now())
        return Response(status_code=200, content_type="application/json", body=stored)

    @app.get("/v1/calendars", responses=responses({200: "The tenant's calendars by name"}))
    def list_calendars() -> Response[CalendarPage]:
        page = CalendarPage(items=services().calendars.list(tenant()))
        return Response(status_code=200, content_type="application/json", body=page)

    @app.get("/v1/calendars/<name>", responses=responses({200: "The calendar"}, 404))
    def get_calendar(name: str) -> Response[Calendar]:
        try:
            found = services().calendars.get(tenant(), name)
        except NotFoundError:
            raise JobNotFoundError(f"calendar {name} not found") from None
        return Response(status_code=200, content_type="application/json", body=found)

    @app.delete(
        "/v1/calendars/<name>",
        responses={**responses({}, 404), 204: {"description": "Deleted", "content": {}}},
    )
    def delete_calendar(name: str) -> Response[Any]:
        try:
            services().calendars.delete(tenant(), name)
        except NotFoundError:
            raise JobNotFoundError(f"calendar {name} not found") from None
        return Response(status_code=204, body="")
