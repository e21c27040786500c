"""The backfill routes: run every occurrence of a job in a range (takt.backfill).

`POST /v1/jobs/{id}/backfill` starts one, `GET /v1/jobs/{id}/backfills` lists the job's latest,
`GET` and `DELETE /v1/jobs/{id}/backfills/{backfill_id}` read and cancel one. A Powertools
`Router` that `takt.api.app` includes, as takt.api.runs is.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, ConfigDict, Field

from takt.api.errors import InvalidRequestError, store_errors
from takt.api.jobs import JobService
from takt.api.routing import api_of, json_response, responses, tenant_of
from takt.backfill import MAX_PARALLEL, BackfillError
from takt.models.ids import format_time
from takt.models.instants import Instant
from takt.store.backfills import BackfillRecord


class BackfillIn(BaseModel):
    """A range of occurrences to run, `from` and `to` included."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    start: Instant = Field(alias="from", description="the first instant of the range")
    end: Instant = Field(alias="to", description="the last instant of the range")
    max_parallel: int = Field(
        default=1, ge=1, le=MAX_PARALLEL, description="how many of its executions run at once"
    )


class BackfillOut(BaseModel):
    id: str
    job_id: str
    start: str = Field(alias="from")
    end: str = Field(alias="to")
    max_parallel: int
    state: str = Field(description="running, done or cancelled")
    total: int = Field(description="occurrences in the range")
    started: int = Field(description="executions this backfill created")
    existing: int = Field(description="occurrences that had an execution already: not run again")
    running: int = Field(description="its executions not finished yet")
    created_at: str
    updated_at: str

    model_config = ConfigDict(populate_by_name=True)

    @classmethod
    def of(cls, record: BackfillRecord) -> BackfillOut:
        return cls(
            id=record.backfill_id,
            job_id=record.job_id,
            start=format_time(record.start),
            end=format_time(record.end),
            max_parallel=record.max_parallel,
            state=record.state,
            total=record.total,
            started=record.started,
            existing=record.existing,
            running=len(record.open),
            created_at=format_time(record.created_at),
            updated_at=format_time(record.updated_at),
        )


class BackfillPage(BaseModel):
    items: list[BackfillOut]


router = Router()  # type: ignore[no-untyped-call]


@router.post(
    "/v1/jobs/<job_id>/backfill",
    responses=responses({202: "The backfill, running its first occurrences"}, 404, 415),
)
def start_backfill(job_id: str, body: Annotated[BackfillIn, Body()]) -> Response[BackfillOut]:
    api, tenant_id = api_of(router), tenant_of(router)
    job = JobService(api).get(tenant_id, job_id)
    try:
        record = api.tenant(tenant_id).lifecycle.backfills.start(
            job, body.start, body.end, body.max_parallel, api.clock.now()
        )
    except BackfillError as exc:
        raise InvalidRequestError(str(exc), [{"field": exc.field, "message": str(exc)}]) from None
    return json_response(BackfillOut.of(record), 202)


@router.get(
    "/v1/jobs/<job_id>/backfills",
    responses=responses({200: "The job's latest backfills, newest first"}, 404),
)
def list_backfills(job_id: str) -> Response[BackfillPage]:
    api, tenant_id = api_of(router), tenant_of(router)
    JobService(api).get(tenant_id, job_id)
    store = api.tenant(tenant_id).backfill_store
    page = BackfillPage(items=[BackfillOut.of(r) for r in store.list_for_job(tenant_id, job_id)])
    return json_response(page)


@router.get(
    "/v1/jobs/<job_id>/backfills/<backfill_id>",
    responses=responses({200: "The backfill and its progress"}, 404),
)
def get_backfill(job_id: str, backfill_id: str) -> Response[BackfillOut]:
    tenant_id = tenant_of(router)
    store = api_of(router).tenant(tenant_id).backfill_store
    with store_errors(f"backfill {backfill_id}"):
        record = store.get(tenant_id, job_id, backfill_id)
    return json_response(BackfillOut.of(record))


@router.delete(
    "/v1/jobs/<job_id>/backfills/<backfill_id>",
    responses=responses(
        {200: "The backfill, cancelled: no more of it starts, its open executions stop"}, 404
    ),
)
def cancel_backfill(job_id: str, backfill_id: str) -> Response[BackfillOut]:
    api, tenant_id = api_of(router), tenant_of(router)
    backfills = api.tenant(tenant_id).lifecycle.backfills
    with store_errors(f"backfill {backfill_id}"):
        record = backfills.cancel(tenant_id, job_id, backfill_id, api.clock.now())
    return json_response(BackfillOut.of(record))
