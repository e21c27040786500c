"""The backfill routes: run every occurrence of a job in a range (takt.backfill).

`POST /v1/jobs/{id}/backfill` starts one, `GET /v1/jobs/{id}/backfills` lists the job's latest,
`GET` and `DELETE /v1/jobs/{id}/backfills/{backfill_id}` read and cancel one. `register` adds the
routes with the API's own helpers, as takt.api.runs does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, ConfigDict, Field

from takt.api.errors import InvalidRequestError, JobNotFoundError
from takt.api.service import JobService
from takt.backfill import MAX_PARALLEL, Backfiller, BackfillError
from takt.models.ids import format_time
from takt.models.instants import Instant
from takt.store.backfills import BackfillRecord, BackfillStore
from takt.store.errors import NotFoundError
from takt.wiring import Services


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


def backfiller(svc: Services) -> Backfiller:
    return JobService(svc).lifecycle().backfills


def _json(body: Any, status: int = 200) -> Response[Any]:
    return Response(status_code=status, content_type="application/json", body=body)


def register(
    app: APIGatewayHttpResolver,
    tenant: Callable[[], str],
    services: Callable[[], Services],
    responses: Callable[..., dict[int, Any]],
) -> None:
    """Add the backfill routes to `app`."""

    @app.post(
        "/v1/jobs/<job_id>/backfill",
        responses=responses({202: "The backfill, running its first occurrences"}, 404, 415),
    )
    def start_backfill(job_id: str, body: Annotated[BackfillIn, Body()]) -> Response[BackfillOut]:
        svc, tenant_id = services(), tenant()
        job = JobService(svc).get(tenant_id, job_id)
        try:
            record = backfiller(svc).start(
                job, body.start, body.end, body.max_parallel, svc.clock.now()
            )
        except BackfillError as exc:
            raise InvalidRequestError(
                str(exc), [{"field": exc.field, "message": str(exc)}]
            ) from None
        return _json(BackfillOut.of(record), 202)

    @app.get(
        "/v1/jobs/<job_id>/backfills",
        responses=responses({200: "The job's latest backfills, newest first"}, 404),
    )
    def list_backfills(job_id: str) -> Response[BackfillPage]:
        svc, tenant_id = services(), tenant()
        JobService(svc).get(tenant_id, job_id)
        store = BackfillStore(svc.clients.dynamodb, svc.settings.tenants_table)
        page = BackfillPage(
            items=[BackfillOut.of(r) for r in store.list_for_job(tenant_id, job_id)]
        )
        return _json(page)

    @app.get(
        "/v1/jobs/<job_id>/backfills/<backfill_id>",
        responses=responses({200: "The backfill and its progress"}, 404),
    )
    def get_backfill(job_id: str, backfill_id: str) -> Response[BackfillOut]:
        svc = services()
        store = BackfillStore(svc.clients.dynamodb, svc.settings.tenants_table)
        try:
            record = store.get(tenant(), job_id, backfill_id)
        except NotFoundError:
            raise JobNotFoundError(f"backfill {backfill_id} not found") from None
        return _json(BackfillOut.of(record))

    @app.delete(
        "/v1/jobs/<job_id>/backfills/<backfill_id>",
        responses=responses(
            {200: "The backfill, cancelled: no more of it starts, its open executions stop"}, 404
        ),
    )
    def cancel_backfill(job_id: str, backfill_id: str) -> Response[BackfillOut]:
        svc = services()
        try:
            record = backfiller(svc).cancel(tenant(), job_id, backfill_id, svc.clock.now())
        except NotFoundError:
            raise JobNotFoundError(f"backfill {backfill_id} not found") from None
        return _json(BackfillOut.of(record))
