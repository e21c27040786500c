"""The calendar routes: a tenant's named calendars of blackout windows and holidays.

`POST /v1/calendars` creates one, `PUT /v1/calendars/{name}` replaces it; jobs name calendars in
`calendars`, and the claimer records each occurrence inside a window as skipped
(takt.models.calendars).
A Powertools `Router` that `takt.api.app` includes, as takt.api.runs is.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel

from takt.api.errors import InvalidRequestError, store_errors
from takt.api.routing import api_of, json_response, responses, tenant_of
from takt.models.calendars import Calendar, CalendarBody, CalendarCreate
from takt.store.calendars import MAX_CALENDARS, CalendarStore


class CalendarPage(BaseModel):
    items: list[Calendar]


router = Router()  # type: ignore[no-untyped-call]


def _calendars() -> CalendarStore:
    return api_of(router).tenant(tenant_of(router)).calendars


@router.post(
    "/v1/calendars",
    responses=responses({201: "The calendar as stored"}, 409, 413, 415),
)
def create_calendar(body: Annotated[CalendarCreate, Body()]) -> Response[Calendar]:
    tenant_id, calendars = tenant_of(router), _calendars()
    if len(calendars.list(tenant_id)) >= MAX_CALENDARS:
        message = f"a tenant has at most {MAX_CALENDARS} calendars"
        raise InvalidRequestError(message, [{"field": "name", "message": message}])
    content = CalendarBody.model_validate(body.model_dump(exclude={"name"}))
    now = api_of(router).clock.now()
    exists = f"calendar {body.name} exists; replace it with PUT /v1/calendars/{body.name}"
    with store_errors(f"calendar {body.name}", conflict=exists):
        stored = calendars.put(tenant_id, body.name, content, now, create=True)
    return json_response(stored, 201)


@router.put(
    "/v1/calendars/<name>",
    responses=responses(
        {200: "The calendar as stored, its version counting writes"}, 404, 413, 415
    ),
)
def replace_calendar(name: str, body: Annotated[CalendarBody, Body()]) -> Response[Calendar]:
    now = api_of(router).clock.now()
    with store_errors(f"calendar {name}"):
        stored = _calendars().put(tenant_of(router), name, body, now, create=False)
    return json_response(stored)


@router.get("/v1/calendars", responses=responses({200: "The tenant's calendars by name"}))
def list_calendars() -> Response[CalendarPage]:
    return json_response(CalendarPage(items=_calendars().list(tenant_of(router))))


@router.get("/v1/calendars/<name>", responses=responses({200: "The calendar"}, 404))
def get_calendar(name: str) -> Response[Calendar]:
    with store_errors(f"calendar {name}"):
        found = _calendars().get(tenant_of(router), name)
    return json_response(found)


@router.delete(
    "/v1/calendars/<name>",
    responses={**responses({}, 404), 204: {"description": "Deleted", "content": {}}},
)
def delete_calendar(name: str) -> Response[Any]:
    with store_errors(f"calendar {name}"):
        _calendars().delete(tenant_of(router), name)
    return Response(status_code=204, body="")
