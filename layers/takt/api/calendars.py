"""The calendar routes: a tenant's named calendars of blackout windows and holidays.

`POST /v1/calendars` creates one, `PUT /v1/calendars/{name}` replaces it; jobs name calendars in
`calendars`, and the claimer records each occurrence inside a window as skipped
(takt.models.calendars).
`register` adds the routes with the API's own helpers, as takt.api.runs does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel

from takt.api.errors import ConflictingStateError, InvalidRequestError, JobNotFoundError
from takt.models.calendars import Calendar, CalendarBody, CalendarCreate
from takt.store.calendars import MAX_CALENDARS
from takt.store.errors import ConflictError, NotFoundError
from takt.wiring import Services


class CalendarPage(BaseModel):
    items: list[Calendar]


def register(
    app: APIGatewayHttpResolver,
    tenant: Callable[[], str],
    services: Callable[[], Services],
    responses: Callable[..., dict[int, Any]],
) -> None:
    """Add the calendar routes to `app`."""

    @app.post(
        "/v1/calendars",
        responses=responses({201: "The calendar as stored"}, 409, 413, 415),
    )
    def create_calendar(body: Annotated[CalendarCreate, Body()]) -> Response[Calendar]:
        svc, tenant_id = services(), tenant()
        if len(svc.calendars.list(tenant_id)) >= MAX_CALENDARS:
            message = f"a tenant has at most {MAX_CALENDARS} calendars"
            raise InvalidRequestError(message, [{"field": "name", "message": message}])
        content = CalendarBody.model_validate(body.model_dump(exclude={"name"}))
        try:
            stored = svc.calendars.put(tenant_id, body.name, content, svc.clock.now(), create=True)
        except ConflictError:
            raise ConflictingStateError(
                f"calendar {body.name} exists; replace it with PUT /v1/calendars/{body.name}"
            ) from None
        return Response(status_code=201, content_type="application/json", body=stored)

    @app.put(
        "/v1/calendars/<name>",
        responses=responses(
            {200: "The calendar as stored, its version counting writes"}, 404, 413, 415
        ),
    )
    def replace_calendar(name: str, body: Annotated[CalendarBody, Body()]) -> Response[Calendar]:
        svc = services()
        try:
            stored = svc.calendars.put(tenant(), name, body, svc.clock.now(), create=False)
        except NotFoundError:
            raise JobNotFoundError(f"calendar {name} not found") from None
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
