"""`takt executions ...`: the history of a job, one execution, and re-running it."""

from __future__ import annotations

import click

from takt.cli.client import call
from takt.cli.context import CliContext

COLUMNS = ["id", "state", "attempt", "scheduled_time", "lag_ms", "error"]


@click.group()
def executions() -> None:
    """Inspect and re-run executions."""


@executions.command("list")
@click.argument("job_id")
@click.option("--limit", default=50, show_default=True)
@click.option("--cursor")
@click.pass_obj
def list_(ctx: CliContext, job_id: str, limit: int, cursor: str | None) -> None:
    """A job's executions, newest first."""
    page, _ = call(
        ctx.endpoint,
        "GET",
        f"/v1/jobs/{job_id}/executions",
        query={"limit": limit, "cursor": cursor},
    )
    ctx.emit(page, page["items"], COLUMNS)


@executions.command("get")
@click.argument("execution_id")
@click.pass_obj
def get(ctx: CliContext, execution_id: str) -> None:
    """One execution with its attempts."""
    execution, _ = call(ctx.endpoint, "GET", f"/v1/executions/{execution_id}")
    ctx.emit(execution, [execution], COLUMNS)


@executions.command("retry")
@click.argument("execution_id")
@click.pass_obj
def retry(ctx: CliContext, execution_id: str) -> None:
    """Re-run a dead or failed execution."""
    execution, _ = call(ctx.endpoint, "POST", f"/v1/executions/{execution_id}/retry")
    ctx.emit(execution, [execution], COLUMNS)
