"""`takt jobs ...`: create, inspect and change jobs through the API."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
from click.shell_completion import CompletionItem

from takt_cli.commands.client import call
from takt_cli.commands.context import CliContext, CliError, context_of
from takt_cli.commands.job_fields import JobFlag, job_flags_of

Command = TypeVar("Command", bound=Callable[..., Any])
JOB_COLUMNS = ["id", "name", "status", "schedule", "time_zone", "next_run_time", "last_outcome"]
NEXT_RUNS = 5
JOB_ID_PREFIX = "job_"
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
    value = _json_value(body, "--body")
    if not isinstance(value, dict):
        raise CliError("--body must be a JSON object")
    return value


def live_job_id(ctx: CliContext, ref: str) -> str | None:
    """The id of the job `ref` names: an id as is, else the tenant's one job of that name now
    (None when no job has it)."""
    if ref.startswith(JOB_ID_PREFIX):
        return ref
    page, _ = call(ctx, "GET", "/v1/jobs", query={"name": ref, "limit": 200})
    ids = [str(job["id"]) for job in page["items"] if job.get("name") == ref]
    if len(ids) > 1:
        raise CliError(f"{len(ids)} jobs are named {ref!r}: use an id ({', '.join(ids)})")
    return ids[0] if ids else None


def resolve_job(ctx: CliContext, ref: str) -> str:
    """The id of the job `ref` names: an id as is, else the tenant's one job of that name."""
    found = live_job_id(ctx, ref)
    if found is None:
        raise CliError(
            f"no job named {ref!r} (and it is not a job id); a deleted job's history is "
            f"listed by the name it had: takt executions list {shlex.quote(ref)}"
        )
    return found


def deleted_jobs(ctx: CliContext, name: str) -> list[dict[str, Any]]:
    """The deleted jobs that had `name`, newest deletion first, while their history is kept."""
    page, _ = call(ctx, "GET", "/v1/deleted-jobs", query={"name": name})
    items: list[dict[str, Any]] = page["items"]
    return items


def _job_ref(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Click callback: a JOB argument, by id or name, as an id."""
    obj = ctx.find_object(CliContext)
    if obj is None or ctx.resilient_parsing:  # shell completion: no API call per keystroke
        return value
    return resolve_job(obj, value)


def job_argument(function: Any) -> Any:
    """The JOB argument every job command takes: its id or its name."""
    return click.argument(
        "job_id", metavar="JOB", callback=_job_ref, shell_complete=complete_job_ids
    )(function)


def _json_value(text: str, flag: str) -> Any:
    """A flag's JSON value; `@file` reads a file, `-` stdin."""
    if text == "-":
        text = sys.stdin.read()
    elif text.startswith("@"):
        with open(text[1:], encoding="utf-8") as handle:  # noqa: PTH123
            text = handle.read()
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CliError(f"{flag} is not valid JSON: {exc}") from exc


# Flags that shape an http(s) target rather than set a field of their own: with either, the
# target is sent in its object form (`{"type": "http", "url": ..., "method": ..., "headers": ...}`).
HTTP_FLAGS: list[tuple[str, dict[str, Any]]] = [
    (
        "--method",
        {
            "type": click.Choice(["GET", "POST", "PUT", "PATCH", "DELETE"], case_sensitive=False),
            "help": "HTTP method of an http(s) target (GET and DELETE send no body). "
            "[default: POST]",
        },
    ),
    (
        "--header",
        {
            "multiple": True,
            "metavar": "'NAME: VALUE'",
            "help": "A header each call of an http(s) target sends (repeatable; credentials "
            "belong in a secret: --body's target.auth).",
        },
    ),
]


CREATE_FLAGS = job_flags_of("JobCreate", defaults=True)
UPDATE_FLAGS = job_flags_of("JobPatch", defaults=False)


def job_flags(flags: list[JobFlag]) -> Callable[[Command], Command]:
    """Add a flag for each field of the job's request body to a command, and the HTTP ones."""

    def add(function: Command) -> Command:
        for flag, settings in reversed(HTTP_FLAGS):
            function = click.option(flag, **settings)(function)
        for job_flag in reversed(flags):
            function = click.option(job_flag.flag, **job_flag.settings)(function)
        return function

    return add


def _nested(flags: list[JobFlag]) -> set[str]:
    """The objects whose fields have flags of their own (`retry`, `dst`): a flag changes one
    field of them and keeps the others. Any other object (the payload) is a value, replaced
    whole."""
    return {f.field.split(".")[0] for f in flags if "." in f.field}


def _shaped_target(target: Any, method: str | None, given: tuple[str, ...]) -> dict[str, Any]:
    """The object form of the http(s) target `target` (a URL, or its stored JSON form) with the
    --method and --header flags applied; headers already there and not named are kept."""
    if isinstance(target, str) and target.startswith("{"):
        target = _json_value(target, "--target")
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        target = {"type": "http", "url": target}
    if not isinstance(target, dict) or target.get("type") != "http":
        raise CliError("--method and --header apply to an http(s) target (--target URL)")
    shaped = dict(target)
    if method is not None:
        shaped["method"] = method.upper()
    headers = dict(shaped.get("headers") or {})
    for line in given:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise CliError(f"--header {line!r} is not 'NAME: VALUE'")
        headers[name.strip()] = value.strip()
    if headers:
        shaped["headers"] = headers
    return shaped


def _fields_of(known: list[JobFlag], flags: dict[str, Any]) -> dict[str, Any]:
    """The body fields the given flags set, nested objects as dicts of what was given."""
    body: dict[str, Any] = {}
    for job_flag in known:
        value = flags.get(job_flag.param)
        if value is None or value == ():
            continue
        field = job_flag.field
        given = _json_value(value, job_flag.flag) if job_flag.as_json else value
        if isinstance(given, tuple):
            given = list(given)
        if "." in field:
            outer, inner = field.split(".")
            body.setdefault(outer, {})[inner] = given
        else:
            body[field] = given
    return body


@click.group()
def jobs() -> None:
    """Create, list, change and run jobs."""


@jobs.command("create")
@click.option("--body", help="The whole job as JSON, @file, or - for stdin; flags override it.")
@job_flags(CREATE_FLAGS)
@click.pass_obj
def create(ctx: CliContext, /, body: str | None, **flags: Any) -> None:
    """Create a job from flags or a JSON body."""
    job = _load_body(body)
    nested = _nested(CREATE_FLAGS)
    for field, value in _fields_of(CREATE_FLAGS, flags).items():
        job[field] = {**job.get(field, {}), **value} if field in nested else value
    if flags["method"] is not None or flags["header"]:
        job["target"] = _shaped_target(job.get("target"), flags["method"], flags["header"])
    created, _ = call(ctx, "POST", "/v1/jobs", job)
    ctx.emit(created, [_job_row(created)], JOB_COLUMNS)


@jobs.command("get")
@job_argument
@click.pass_obj
def get(ctx: CliContext, job_id: str) -> None:
    """Show one job, its schedule in plain words and its next runs.

    As JSON: the job, with `schedule_description`, `next_runs` and `backfills_running` added.
    """
    job, _ = call(ctx, "GET", f"/v1/jobs/{job_id}")
    preview, _ = call(ctx, "GET", f"/v1/jobs/{job_id}/preview", query={"count": NEXT_RUNS})
    found, _ = call(ctx, "GET", f"/v1/jobs/{job_id}/backfills")
    running = [b for b in found["items"] if b["state"] == "running"]
    if ctx.output == "json":
        ctx.emit(
            {
                **job,
                "schedule_description": preview["description"],
                "next_runs": preview["next_runs"],
                "backfills_running": running,
            }
        )
        return
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)
    click.echo(f"\nschedule:  {preview['description']}")
    for line in _extras(job):
        click.echo(line)
    for b in running:
        done = b["started"] + b["existing"] - b["running"]
        click.echo(
            f"backfill:  {b['id']} {b['from']} to {b['to']}: {done} of {b['total']} done, "
            f"{b['running']} running"
        )
    runs = preview["next_runs"]
    if not runs:
        click.echo("next runs: none")
        return
    heading = "next runs if resumed" if job["status"] == "paused" else "next runs"
    click.echo(f"{heading}:")
    for run in runs:
        fires = f"  fires {run['fires_at']}" if run.get("fires_at", run["at"]) != run["at"] else ""
        click.echo(f"  {run['at']}{fires}")


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
@job_argument
@click.option("--body", help="Fields to change as JSON, @file, or -; flags override it.")
@job_flags(UPDATE_FLAGS)
@click.option("--if-match", help="The version (ETag) you read; refused if it changed.")
@click.pass_obj
def update(
    ctx: CliContext, /, job_id: str, body: str | None, if_match: str | None, **flags: Any
) -> None:
    """Change a job's fields: only those given change."""
    change = _load_body(body)
    fields = _fields_of(UPDATE_FLAGS, flags)
    shaping = flags["method"] is not None or bool(flags["header"])
    if not change and not fields and not shaping:
        raise CliError("nothing to change: give --body or a field flag (--help lists them)")
    nested = {k: v for k, v in fields.items() if k in _nested(UPDATE_FLAGS)}
    if nested or (shaping and "target" not in fields and "target" not in change):
        # A nested object (retry, dst, an HTTP target's) is replaced whole by the API: keep
        # the fields no flag names, from the version read.
        current, _ = call(ctx, "GET", f"/v1/jobs/{job_id}")
        if_match = if_match or str(current["version"])
        for field, value in nested.items():
            fields[field] = {**(current[field] or {}), **change.get(field, {}), **value}
        if shaping:
            fields.setdefault("target", change.get("target", current["target"]))
    change.update(fields)
    if shaping:
        change["target"] = _shaped_target(change["target"], flags["method"], flags["header"])
    headers = {"If-Match": f'"{if_match}"'} if if_match else None
    job, _ = call(ctx, "PATCH", f"/v1/jobs/{job_id}", change, headers=headers)
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)


def _set_status(ctx: CliContext, job_id: str, status: str) -> None:
    job, _ = call(ctx, "PATCH", f"/v1/jobs/{job_id}", {"status": status})
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)


@jobs.command("pause")
@job_argument
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
@job_argument
@click.pass_obj
def resume(ctx: CliContext, job_id: str) -> None:
    """Let a paused job fire again, from its next occurrence (ending a pause-until too)."""
    job, _ = call(ctx, "PATCH", f"/v1/jobs/{job_id}", {"status": "active", "pause_until": None})
    ctx.emit(job, [_job_row(job)], JOB_COLUMNS)


@jobs.command("delete")
@job_argument
@click.pass_obj
def delete(ctx: CliContext, job_id: str) -> None:
    """Delete a job (its history stays until it expires)."""
    call(ctx, "DELETE", f"/v1/jobs/{job_id}")
    ctx.emit({"deleted": job_id}, [{"deleted": job_id}], ["deleted"])
    if ctx.output == "table":
        click.echo(f"its history stays until it expires: takt executions list {job_id}", err=True)


DELETED_COLUMNS = ["id", "name", "deleted_at", "history_until"]


@jobs.command("deleted")
@click.argument("name")
@click.pass_obj
def deleted(ctx: CliContext, name: str) -> None:
    """The deleted jobs that had NAME, newest first, while their history is kept."""
    items = deleted_jobs(ctx, name)
    ctx.emit({"items": items}, items, DELETED_COLUMNS)


@jobs.command("trigger")
@job_argument
@click.pass_obj
def trigger(ctx: CliContext, job_id: str) -> None:
    """Run a job once, now."""
    execution, _ = call(ctx, "POST", f"/v1/jobs/{job_id}/trigger")
    ctx.emit(execution, [execution], ["id", "state", "scheduled_time"])


BACKFILL_COLUMNS = ["id", "state", "from", "to", "total", "started", "existing", "running"]


@jobs.command("backfill")
@job_argument
@click.option("--from", "start", required=True, help="First instant of the range (RFC 3339).")
@click.option("--to", "end", required=True, help="Last instant of the range (RFC 3339).")
@click.option("--max-parallel", type=int, default=1, show_default=True)
@click.pass_obj
def backfill(ctx: CliContext, job_id: str, start: str, end: str, max_parallel: int) -> None:
    """Run every occurrence of a range (once: occurrences that ran already are not re-run)."""
    body = {"from": start, "to": end, "max_parallel": max_parallel}
    started, _ = call(ctx, "POST", f"/v1/jobs/{job_id}/backfill", body)
    ctx.emit(started, [started], BACKFILL_COLUMNS)


@jobs.command("backfills")
@job_argument
@click.option("--cancel", "cancel_id", help="Cancel this backfill of the job.")
@click.pass_obj
def backfills(ctx: CliContext, job_id: str, cancel_id: str | None) -> None:
    """List a job's backfills with their progress, or cancel one."""
    if cancel_id is not None:
        cancelled, _ = call(ctx, "DELETE", f"/v1/jobs/{job_id}/backfills/{cancel_id}")
        ctx.emit(cancelled, [cancelled], BACKFILL_COLUMNS)
        return
    page, _ = call(ctx, "GET", f"/v1/jobs/{job_id}/backfills")
    ctx.emit(page, page["items"], BACKFILL_COLUMNS)
