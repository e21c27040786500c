"""The workflow run routes: a job's runs, one run with its tasks, and re-running a failed run.

`register` adds them to the API's resolver with the same tenant helper and documented problem
answers as every other route, so the access middleware and problem+json mapping apply unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel, Field

from takt.api.errors import ConflictingStateError, JobNotFoundError
from takt.api.models import ExecutionOut
from takt.api.service import JobService
from takt.models.ids import format_time
from takt.models.records import ExecutionRecord
from takt.store.errors import NotFoundError
from takt.store.jobs import EXECUTION_CURSOR
from takt.wiring import Services
from takt.workflows.engine import RunEngine, RunStateError, RunView
from takt.workflows.model import depths


class RunSummaryOut(BaseModel):
    id: str = Field(description="the run id: the id of its occurrence's execution")
    job_id: str
    scheduled_time: str
    trigger: str
    state: str = Field(description="pending, running, succeeded, failed (or skipped, queued)")
    generation: int = Field(description="0, plus one for each retry of the run")
    tasks_total: int
    started_at: str | None
    finished_at: str | None
    error: str | None

    @classmethod
    def of(cls, run: ExecutionRecord) -> RunSummaryOut:
        return cls(
            id=run.execution_id,
            job_id=run.job_id,
            scheduled_time=format_time(run.scheduled_time),
            trigger=run.trigger,
            state=run.state.value,
            generation=run.run_gen or 0,
            tasks_total=run.run_tasks or 0,
            started_at=_t(run.started_at),
            finished_at=_t(run.finished_at),
            error=run.error,
        )


class TaskOut(BaseModel):
    id: str
    depends_on: list[str]
    trigger_rule: str
    target: str
    depth: int = Field(description="0 for a root task, else one more than its deepest upstream")
    state: str = Field(
        description="waiting, pending, running, retry_wait, succeeded, failed, dead, cancelled, "
        "or upstream_failed (not run)"
    )
    generation: int
    executions: list[ExecutionOut] = Field(description="its executions, oldest generation first")


class RunOut(RunSummaryOut):
    counts: dict[str, int] = Field(description="tasks by state")
    tasks: list[TaskOut] = Field(description="in definition order")

    @classmethod
    def of_view(cls, view: RunView) -> RunOut:
        depth = depths([t.spec for t in view.tasks])
        tasks = [
            TaskOut(
                id=t.task_id,
                depends_on=t.spec.depends_on,
                trigger_rule=t.spec.trigger_rule,
                target=t.spec.target,
                depth=depth.get(t.task_id, 0),
                state=view.task_state(t),
                generation=t.gen,
                executions=[ExecutionOut.of(e) for e in view.executions.get(t.task_id, [])],
            )
            for t in view.tasks
        ]
        counts: dict[str, int] = {}
        for task in tasks:
            counts[task.state] = counts.get(task.state, 0) + 1
        summary = RunSummaryOut.of(view.run)
        return cls(**summary.model_dump(), counts=counts, tasks=tasks)


class RunPage(BaseModel):
    items: list[RunSummaryOut]
    next_cursor: str | None


def _t(value: Any) -> str | None:
    return None if value is None else format_time(value)


def _engine(svc: Services) -> RunEngine:
    return JobService(svc).lifecycle().runs


def _view(svc: Services, tenant_id: str, run_id: str) -> RunView:
    try:
        return _engine(svc).view(tenant_id, run_id)
    except NotFoundError:
        raise JobNotFoundError(f"run {run_id} not found") from None


def register(
    app: APIGatewayHttpResolver,
    tenant: Callable[[], str],
    services: Callable[[], Services],
    responses: Callable[..., dict[int, Any]],
) -> None:
    """Add the run routes to `app`; `tenant`, `services` (the tenant's) and `responses` are
    the API's own helpers."""

    @app.get(
        "/v1/jobs/<job_id>/runs",
        responses=responses({200: "A page of the workflow's runs, newest first"}, 404),
    )
    def list_runs(
        job_id: str,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        cursor: Annotated[str | None, Query(pattern=EXECUTION_CURSOR)] = None,
    ) -> Response[RunPage]:
        service, tenant_id = JobService(services()), tenant()
        records, next_cursor = service.executions(tenant_id, job_id, limit, cursor)
        if not records and cursor is None:
            service.get(tenant_id, job_id)  # 404 for a job that never existed
        page = RunPage(
            items=[RunSummaryOut.of(r) for r in records if r.run_tasks is not None],
            next_cursor=next_cursor,
        )
        return Response(status_code=200, content_type="application/json", body=page)

    @app.get(
        "/v1/runs/<run_id>",
        responses=responses({200: "The run: each task's state and its executions"}, 404),
    )
    def get_run(run_id: str) -> Response[RunOut]:
        body = RunOut.of_view(_view(services(), tenant(), run_id))
        return Response(status_code=200, content_type="application/json", body=body)

    @app.post(
        "/v1/runs/<run_id>/retry",
        responses=responses(
            {202: "The run, running again: its failed and not-run tasks re-run"}, 404, 409
        ),
    )
    def retry_run(run_id: str) -> Response[RunOut]:
        tenant_id, svc = tenant(), services()
        try:
            _engine(svc).retry(tenant_id, run_id, svc.clock.now())
        except NotFoundError:
            raise JobNotFoundError(f"run {run_id} not found") from None
        except RunStateError as exc:
            raise ConflictingStateError(str(exc)) from None
        body = RunOut.of_view(_view(svc, tenant_id, run_id))
        return Response(status_code=202, content_type="application/json", body=body)
