"""`takt executions ...`: the history of a job, one execution, re-running or cancelling it."""

from __future__ import annotations

import shlex
from typing import Any

import click

from takt_cli.commands.client import call
from takt_cli.commands.context import CliContext, CliError, render_table
from takt_cli.commands.jobs import (
    JOB_ID_PREFIX,
    complete_job_ids,
    deleted_jobs,
    job_argument,
    live_job_id,
)

COLUMNS = ["id", "state", "attempt", "scheduled_time", "lag_ms", "error"]
ATTEMPT_COLUMNS = [
    "attempt",
    "outcome",
    "status_code",
    "started_at",
    "finished_at",
    "duration_ms",
    "error",
]


def _row(execution: dict[str, Any]) -> dict[str, Any]:
    """An execution as a table row: its attempt read against its own re-run's budget ("1
    (re-run 2)" where the API's `attempt_label` says "re-run 2, attempt 1 of 3", not the
    fence's 7), and one that succeeded in the end shows no error (the API keeps its last failed
    attempt's, which its attempts list)."""
    attempt = str(execution.get("rerun_attempt", execution.get("attempt")))
    if execution.get("rerun"):
        attempt += f" (re-run {execution['rerun']})"
    row = {**execution, "attempt": attempt}
    if execution.get("state") == "succeeded":
        row["error"] = None
    return row


@click.group()
def executions() -> None:
    """Inspect, re-run and cancel executions."""


def history_of(ctx: CliContext, ref: str, *, deleted: bool) -> tuple[str, bool]:
    """The id of the job whose history `ref` asks for, and whether that job is a deleted one
    found by its former name: an id as is; a name, the job that has it now, else (or with
    `deleted`) the newest deleted job that had it while its history is kept."""
    if ref.startswith(JOB_ID_PREFIX):
        return ref, False
    if not deleted:
        found = live_job_id(ctx, ref)
        if found is not None:
            return found, False
    holders = deleted_jobs(ctx, ref)
    if not holders:
        nobody = "" if deleted else f"no job is named {ref!r}, and "
        raise CliError(
            f"{nobody}no deleted job that had the name {ref!r} has history left (a deleted "
            "job's history is kept as long as its executions, TAKT_HISTORY_RETENTION_DAYS)"
        )
    newest = holders[0]
    click.echo(
        f"{newest['id']}, named {ref!r}, was deleted at {newest['deleted_at']}; its history is "
        f"kept until {newest['history_until']}",
        err=True,
    )
    if len(holders) > 1:
        click.echo(
            f"{len(holders) - 1} earlier deleted job(s) had the name: "
            f"takt jobs deleted {shlex.quote(ref)}",
            err=True,
        )
    return str(newest["id"]), True


def _reused(ctx: CliContext, name: str, job_id: str) -> bool:
    """Whether a deleted job other than `job_id` had `name`."""
    return any(holder["id"] != job_id for holder in deleted_jobs(ctx, name))


@executions.command("list")
@click.argument("job", metavar="JOB", shell_complete=complete_job_ids)
@click.option(
    "--deleted",
    is_flag=True,
    help="The newest deleted job that had the name JOB, even when a job has the name now.",
)
@click.option("--limit", default=50, show_default=True)
@click.option("--cursor")
@click.pass_obj
def list_(ctx: CliContext, job: str, deleted: bool, limit: int, cursor: str | None) -> None:
    """A job's executions, newest first. JOB is an id or a name: the job that has the name now,
    else the newest deleted job that had it, while its history is kept."""
    job_id, former = history_of(ctx, job, deleted=deleted)
    page, _ = call(
        ctx,
        "GET",
        f"/v1/jobs/{job_id}/executions",
        query={"limit": limit, "cursor": cursor},
    )
    ctx.emit(page, [_row(e) for e in page["items"]], COLUMNS)
    if ctx.output == "table" and page.get("next_cursor"):
        # A former name may be a new job's by the next call: the deleted job's pages go by its id.
        again = f"takt executions list {job_id} " if former else ""
        click.echo(f"next page: {again}--cursor {page['next_cursor']}", err=True)
    asked_by_name = not former and not job.startswith(JOB_ID_PREFIX)
    if asked_by_name and not page["items"] and cursor is None and _reused(ctx, job, job_id):
        # A new job took the name of a deleted one: its empty history is not the one asked for.
        click.echo(
            f"a deleted job had the name {job!r} before: "
            f"takt executions list --deleted {shlex.quote(job)}",
            err=True,
        )


@executions.command("get")
@click.argument("execution_id")
@click.pass_obj
def get(ctx: CliContext, execution_id: str) -> None:
    """One execution with its attempts."""
    execution, _ = call(ctx, "GET", f"/v1/executions/{execution_id}")
    ctx.emit(execution, [_row(execution)], COLUMNS)
    if ctx.output == "table":
        click.echo("\nattempts:")
        if execution["attempts"]:
            click.echo(render_table(execution["attempts"], ATTEMPT_COLUMNS))
            # A container's log stream address is too long for a column: one line each.
            for attempt in execution["attempts"]:
                if attempt.get("logs"):
                    click.echo(f"attempt {attempt['attempt']} logs: {attempt['logs']}")
        else:
            click.echo("none yet")


@executions.command("cancel")
@click.argument("execution_id")
@click.pass_obj
def cancel(ctx: CliContext, execution_id: str) -> None:
    """Cancel an execution: at once if it waits, at its worker's next heartbeat if it runs."""
    execution, _ = call(ctx, "POST", f"/v1/executions/{execution_id}/cancel")
    ctx.emit(execution, [_row(execution)], COLUMNS)


@executions.command("retry")
@click.argument("execution_id")
@click.option(
    "--as-was",
    is_flag=True,
    help="Re-send the execution's snapshot (target, payload, timeout, retry policy) instead of "
    "the job as it is now.",
)
@click.pass_obj
def retry(ctx: CliContext, execution_id: str, as_was: bool) -> None:
    """Re-run a dead, failed or cancelled execution, with the job as it is now (after a
    `takt jobs update` fix) unless --as-was."""
    execution, _ = call(
        ctx, "POST", f"/v1/executions/{execution_id}/retry", body={"as_was": as_was}
    )
    ctx.emit(execution, [_row(execution)], COLUMNS)


@executions.command("retry-dead")
@job_argument
@click.option(
    "--state",
    type=click.Choice(["dead", "failed"]),
    default="dead",
    show_default=True,
    help="Re-run the job's executions in this state.",
)
@click.option("--as-was", is_flag=True, help="Re-send each execution's snapshot.")
@click.option("--limit", default=100, show_default=True, help="Re-run at most this many.")
@click.pass_obj
def retry_dead(ctx: CliContext, job_id: str, state: str, as_was: bool, limit: int) -> None:
    """Re-run a job's dead (or failed) executions at once, with the job as it is now unless
    --as-was."""
    result, _ = call(
        ctx,
        "POST",
        f"/v1/jobs/{job_id}/executions/retry",
        body={"state": state, "as_was": as_was, "limit": limit},
    )
    ctx.emit(result, [_row(e) for e in result["items"]], COLUMNS)
    if ctx.output == "table":
        for refused in result["refused"]:
            click.echo(f"not re-run: {refused['id']}: {refused['detail']}", err=True)
        if result["more"]:
            click.echo("more remain: run it again", err=True)


@executions.command("dead")
@click.option(
    "--state",
    type=click.Choice(["dead", "failed"]),
    default="dead",
    show_default=True,
    help="dead: every attempt failed; failed: the target ruled out a retry.",
)
@click.option("--limit", default=50, show_default=True)
@click.option("--cursor")
@click.pass_obj
def dead(ctx: CliContext, state: str, limit: int, cursor: str | None) -> None:
    """Executions that need a person, across all jobs, newest first."""
    page, _ = call(
        ctx, "GET", "/v1/executions", query={"state": state, "limit": limit, "cursor": cursor}
    )
    names = _job_names(ctx, {e["job_id"] for e in page["items"]}) if ctx.output == "table" else {}
    rows = [{**_row(e), "job": names.get(e["job_id"], e["job_id"])} for e in page["items"]]
    ctx.emit(page, rows, ["id", "job", "attempt", "finished_at", "error"])
    if ctx.output == "table" and page.get("next_cursor"):
        click.echo(f"next page: --cursor {page['next_cursor']}", err=True)


def _job_names(ctx: CliContext, job_ids: set[str]) -> dict[str, str]:
    """The name of each job that has one, for a table that lists executions of many jobs (a job
    deleted since, or one without a name, keeps its id)."""
    names: dict[str, str] = {}
    for job_id in sorted(job_ids):
        try:
            job, _ = call(ctx, "GET", f"/v1/jobs/{job_id}")
        except CliError:
            continue
        if job.get("name"):
            names[job_id] = str(job["name"])
    return names
