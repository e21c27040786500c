"""`takt jobs ...`: create, inspect and change jobs through the API."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

import click
from click.shell_completion import CompletionItem

from takt.cli.client import call
from takt.cli.context import CliContext, CliError, context_of

JOB_COLUMNS = ["id", "name", "status", "schedule", "next_run_time", "last_outcome"]
NEXT_RUNS = 5
COMPLETION_TIMEOUT_SEC = 2.0
"""A shell waits for completions; a slow or absent API must not hang the prompt."""


def complete_job_ids(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Job ids from the API for shell completion, each with its name; none if it is unreachable."""
    api = context_of(ctx.find_root().params)
    try:
        page, _ = call(
            api, "GET", "/v1/jobs", query={"limit": 200}, read_timeout=COMPLETION_TIMEOUT_SEC
        )
    except CliError:
        return []
    return [
        CompletionItem(job["id"], help=job.get("name"))
        for job in page["items"]
        if job["id"].startswith(incomplete)
    ]


def _job_row(job: dict[str, Any]) -> dict[str, Any]:
    row = dict(job)
    row["schedule"] = job.get("schedule") or (
        f"every {job['interval']}" if job.get("interval") else f"at {job.get('run_at')}"
    )
    return row


def _load_body(body: str | None) -> dict[str, Any]:
    if body is None:
        return {}
    text = sys.stdin.read() if body == "-" else body
    if text.startswith("@"):
        with open(text[1:], encoding="utf-8") as handle:  # noqa: PTH123
            text = handle.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"--body is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise CliError("--body must be a JSON object")
    return value


@click.group()
def jobs() -> None:
    """Create, list, change and run jobs."""


@jobs.command("create")
@click.option("--body", help="The whole job as JSON, @file, or - for stdin.")
@click.option("--name")
@click.option("--cron", "schedule", help="Cron expression (5 fields, optional seconds).")
@click.option("--run-at", help="One-off time, RFC 3339.")
@click.option("--every", "interval", help="Fixed interval, e.g. 90s, 1h.")
@click.option("--tz", "time_zone", help="IANA time zone for the cron.")
@click.option(
    "--target",
    help="What each run calls: an http(s) URL, handler:NAME, or an SQS, SNS or EventBridge ARN.",
)
@click.option("--payload", help="JSON payload.")
@click.option("--priority", type=click.Choice(["high", "default", "low"]))
@click.option("--idempotency-key")
@click.pass_obj
def create(ctx: CliContext, /, **fields: str | None) -> None:
    """Create a job from flags or a JSON body."""
    body = fields.pop("body")
    idempotency_key = fields.pop("idempotency_key")
    payload = fields.pop("payload")
    job = _load_body(body)
    job.update({k: v for k, v in fields.items() if v is not None})
    if payload is not None:
        try:
            job["payload"] = json.loads(payload)
        except ValueError as exc:
            raise CliError(f"--payload is not valid JSON: {exc}") from exc
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
    created, _ = call(ctx, "POST", "/v1/jobs", job, headers=headers)
    ctx.emit(created, [_job_row(created)], JOB_COLUMNS)


@jobs.command("get")
@click.argument("job_id", shell_complete=complete_job_ids)
@click.pass_obj
def get(ctx: CliContext, job_id: str) -> None:
    """Show one job, its schedule in plain words and its next runs.

    As JSON: the job, with `schedule_description` and `next_runs` added.
    """
    job, _ = call(ctx, "GET", f"/v1/jobs/{job_id}")
    preview, _ = call(ctx, "GET", f"/v1/jobs/{job_id}/preview", query={"count": NEXT_RUNS})
    if ctx.output == "json":
        ctx.emit(
            {
                **job,
                "schedule_description": preview["description"],
                "next_runs": preview["next_runs"],
            }
        )
        return
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)
    click.echo(f"\nschedule:  {preview['description']}")
    for line in _extras(job):
        click.echo(line)
    runs = preview["next_runs"]
    if not runs:
        click.echo("next runs: none")
        return
    heading = "next runs if resumed" if job["status"] == "paused" else "next runs"
    click.echo(f"{heading} ({job['time_zone']}):")
    for run in runs:
        fires = f"  fires {run['fires_at']}" if run.get("fires_at", run["at"]) != run["at"] else ""
        click.echo(f"  {run['at']}  {run['local']}{fires}")


def _extras(job: dict[str, Any]) -> list[str]:
    """The lines `jobs get` adds for jitter, a pause's end and calendars, when the job has them."""
    lines = []
    if job.get("jitter"):
        lines.append(f"jitter:    each run fires within {job['jitter']} after its time")
    pause_until = job.get("pause_until")
    if pause_until and pause_until > datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"):
        lines.append(f"paused until {pause_until}: earlier runs are not run")
    if job.get("calendars"):
        lines.append(f"calendars: {', '.join(job['calendars'])} (runs in their windows skip)")
    return lines


@jobs.command("list")
@click.option("--status", type=click.Choice(["active", "paused", "completed"]))
@click.option("--name", help="Name prefix.")
@click.option("--limit", default=50, show_default=True)
@click.option("--cursor")
@click.pass_obj
def list_(
    ctx: CliContext, status: str | None, name: str | None, limit: int, cursor: str | None
) -> None:
    """List jobs with their next run and last outcome."""
    page, _ = call(
        ctx,
        "GET",
        "/v1/jobs",
        query={"status": status, "name": name, "limit": limit, "cursor": cursor},
    )
    ctx.emit(page, [_job_row(j) for j in page["items"]], JOB_COLUMNS)
    if ctx.output == "table" and page.get("next_cursor"):
        click.echo(f"next page: --cursor {page['next_cursor']}", err=True)


@jobs.command("update")
@click.argument("job_id", shell_complete=complete_job_ids)
@click.option("--body", required=True, help="Fields to change as JSON, @file, or -.")
@click.option("--if-match", help="The version (ETag) you read; refused if it changed.")
@click.pass_obj
def update(ctx: CliContext, job_id: str, body: str, if_match: str | None) -> None:
    """Change a job's fields."""
    headers = {"If-Match": f'"{if_match}"'} if if_match else None
    job, _ = call(ctx, "PATCH", f"/v1/jobs/{job_id}", _load_body(body), headers=headers)
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)


def _set_status(ctx: CliContext, job_id: str, status: str) -> None:
    job, _ = call(ctx, "PATCH", f"/v1/jobs/{job_id}", {"status": status})
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)


@jobs.command("pause")
@click.argument("job_id", shell_complete=complete_job_ids)
@click.option(
    "--until",
    help="Resume by itself at this instant (RFC 3339); occurrences before it do not run.",
)
@click.pass_obj
def pause(ctx: CliContext, job_id: str, until: str | None) -> None:
    """Stop a job from firing until resumed, or until an instant."""
    if until is None:
        _set_status(ctx, job_id, "paused")
        return
    job, _ = call(ctx, "PATCH", f"/v1/jobs/{job_id}", {"pause_until": until})
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)


@jobs.command("resume")
@click.argument("job_id", shell_complete=complete_job_ids)
@click.pass_obj
def resume(ctx: CliContext, job_id: str) -> None:
    """Let a paused job fire again, from its next occurrence (ending a pause-until too)."""
    job, _ = call(ctx, "PATCH", f"/v1/jobs/{job_id}", {"status": "active", "pause_until": None})
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)


@jobs.command("delete")
@click.argument("job_id", shell_complete=complete_job_ids)
@click.pass_obj
def delete(ctx: CliContext, job_id: str) -> None:
    """Delete a job (its history stays until it expires)."""
    call(ctx, "DELETE", f"/v1/jobs/{job_id}")
    ctx.emit({"deleted": job_id}, [{"deleted": job_id}], ["deleted"])


@jobs.command("trigger")
@click.argument("job_id", shell_complete=complete_job_ids)
@click.pass_obj
def trigger(ctx: CliContext, job_id: str) -> None:
    """Run a job once, now."""
    execution, _ = call(ctx, "POST", f"/v1/jobs/{job_id}/trigger")
    ctx.emit(execution, [execution], ["id", "state", "scheduled_time"])
