"""Quarantined records, for an operator: list them, and clear one once its item is repaired.

Admin only, whatever the tenant: a record names another tenant's keys and errors. The records
are read with the function's own role, which IAM confines to the quarantine partition of the
tenants table (`takt.store.quarantine`); what clearing puts back on the item is written through
the session of the item's tenant, as every other write of the API.

Clearing puts the item back where it was met, so the part that parked it meets it again: a job
is marked unindexed (the reconciler indexes it from the job as it then is, and the claimer
plans it), an execution goes back into the watchdog's `open` index. An item still bad is then
parked again, as a new record. `takt quarantine list|clear` calls these routes.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, Field

from takt.api.dependencies import Api
from takt.api.errors import ConflictingStateError, ForbiddenError, JobNotFoundError
from takt.api.routing import api_of, caller_of, json_response, responses
from takt.models.ids import to_ms
from takt.store.errors import NotFoundError
from takt.store.quarantine import QuarantineRecord, QuarantineStore


class QuarantinedOut(BaseModel):
    id: str = Field(description="the record's id, stable for the item: `takt quarantine clear ID`")
    table: str = Field(description="`jobs`, `executions` or `due`: where the item lives")
    key: dict[str, str] = Field(description="the item's key in that table")
    where: str = Field(
        description="what met it last: claimer, watchdog, indexer, reconciler or api"
    )
    error: str = Field(description="why it could not be read or written")
    first_at: str
    last_at: str
    seen: int = Field(description="how often it was met")
    tenant: str | None = None

    @classmethod
    def of(cls, record: QuarantineRecord) -> QuarantinedOut:
        return cls(
            id=record.id,
            table=record.table,
            key=record.key,
            where=record.where,
            error=record.error,
            first_at=record.first_at,
            last_at=record.last_at,
            seen=record.seen,
            tenant=record.tenant_id,
        )


class QuarantinePage(BaseModel):
    items: list[QuarantinedOut]


router = Router()  # type: ignore[no-untyped-call]


def _admin() -> Api:
    role = caller_of(router).identity.role
    if role != "admin":
        raise ForbiddenError(f"only an admin may see or clear quarantine ({role} role)")
    return api_of(router)


def _store(api: Api) -> QuarantineStore:
    if api.quarantine is None:
        raise ConflictingStateError("this deployment keeps no quarantine")
    return api.quarantine


@router.get("/v1/quarantine", responses=responses({200: "Every quarantined record"}))
def list_quarantine() -> Response[QuarantinePage]:
    records = _store(_admin()).list()
    return json_response(QuarantinePage(items=[QuarantinedOut.of(r) for r in records]))


@router.delete(
    "/v1/quarantine/<record_id>",
    responses=responses({204: "Cleared: the item is back where it was met"}, 404, 409),
)
def clear_quarantine(record_id: str) -> Response[None]:
    api = _admin()
    store = _store(api)
    try:
        record = store.get(record_id)
    except NotFoundError:
        raise JobNotFoundError(f"no quarantined record {record_id}") from None
    _put_back(api, record)
    if not store.drop(record):
        raise ConflictingStateError(
            f"record {record_id} was met again meanwhile: the item is still bad"
        )
    return Response(status_code=204, content_type="application/json", body=None)


def _put_back(api: Api, record: QuarantineRecord) -> None:
    """Put the item of `record` back where the part that parked it will meet it again."""
    if record.tenant_id is None:
        return  # a due item that named no job: it was deleted, and nothing points at it
    data = api.tenant(record.tenant_id)
    if record.table == "jobs" and "job_id" in record.key:
        data.jobs.mark_unindexed(record.tenant_id, record.key["job_id"])
    elif record.table == "executions" and record.restore and "open_shard" in record.restore:
        data.executions.reopen(
            record.key["job_key"],
            record.key["sk"],
            record.restore["open_shard"],
            to_ms(api.clock.now()),
        )
