"""The workflow run routes: a job's runs, one run with its tasks, and re-running a failed run.

A Powertools `Router` that `takt.api.app` includes, with the same request helpers and documented
problem answers as every other route (takt.api.routing), so the access middleware and the
problem+json mapping apply unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel, Field

from takt.api.errors import ConflictingStateError, store_errors
from takt.api.executions import ExecutionService
from takt.api.models import ExecutionOut
from takt.api.routing import api_of, json_response, responses, tenant_of
from takt.models.ids import format_time
from takt.models.records import ExecutionRecord
from takt.store.jobs import EXECUTION_CURSOR
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


def _view(runs: RunEngine, tenant_id: str, run_id: str) -> RunView:
    with store_errors(f"run {run_id}"):
        return runs.view(tenant_id, run_id)


router = Router()  # type: ignore[no-untyped-call]


@router.get(
    "/v1/jobs/<job_id>/runs",
    responses=responses({200: "A page of the workflow's runs, newest first"}, 404),
)
def list_runs(
    job_id: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(pattern=EXECUTION_CURSOR)] = None,
) -> Response[RunPage]:
    service = ExecutionService(api_of(router))
    records, next_cursor = service.of_job(tenant_of(router), job_id, limit, cursor)
    page = RunPage(
        items=[RunSummaryOut.of(r) for r in records if r.run_tasks is not None],
        next_cursor=next_cursor,
    )
    return json_response(page)


@router.get(
    "/v1/runs/<run_id>",
    responses=responses({200: "The run: each task's state and its executions"}, 404),
)
def get_run(run_id: str) -> Response[RunOut]:
    tenant_id = tenant_of(router)
    runs = api_of(router).tenant(tenant_id).lifecycle.runs
    return json_response(RunOut.of_view(_view(runs, tenant_id, run_id)))


@router.post(
    "/v1/runs/<run_id>/retry",
    responses=responses(
        {202: "The run, running again: its failed and not-run tasks re-run"}, 404, 409
    ),
)
def retry_run(run_id: str) -> Response[RunOut]:
    api, tenant_id = api_of(router), tenant_of(router)
    runs = api.tenant(tenant_id).lifecycle.runs
    try:
        with store_errors(f"run {run_id}"):
            runs.retry(tenant_id, run_id, api.clock.now())
    except RunStateError as exc:
        raise ConflictingStateError(str(exc)) from None
    return json_response(RunOut.of_view(_view(runs, tenant_id, run_id)), 202)
