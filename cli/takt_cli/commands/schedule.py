"""`takt schedule`: see when a schedule fires, offline, with the library the scheduler itself uses.

Nothing here talks to the API: previewing a schedule before creating a job must not need a server,
and computing it with `takt.schedule` means the preview and the scheduler cannot disagree.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from datetime import datetime
from typing import Any, get_args
from zoneinfo import ZoneInfo

import click

from takt.clock import SystemClock, format_local, format_time
from takt.schedule import (
    DstPolicy,
    IntervalSchedule,
    Schedule,
    ScheduleError,
    jitter_offset,
    parse_cron,
    parse_duration,
    preview,
    validate_time_zone,
)
from takt.schedule.dst import GapRule, OverlapRule
from takt_cli.commands.context import CliContext, CliError

MAX_COUNT = 1000
"""More instants than anyone reads, and few enough that a typo cannot hang the terminal."""

_BATCH_KEYS = frozenset({"cron", "every", "tz", "after", "count", "gap", "overlap"})


@click.group()
def schedule() -> None:
    """Inspect schedules locally, without a takt server."""


@schedule.command("preview")
@click.option("--cron", "cron_expr", metavar="EXPR", help="A cron expression (takt's dialect).")
@click.option("--every", metavar="DURATION", help="An interval such as 15m, 1h30m or PT90S.")
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone of the cron job.")
@click.option("--after", metavar="RFC3339", help="List instants after this one [default: now].")
@click.option(
    "--count", type=click.IntRange(1, MAX_COUNT), default=5, show_default=True, help="How many."
)
@click.option(
    "--gap",
    type=click.Choice(get_args(GapRule)),
    default="run",
    show_default=True,
    help="A fixed-time job whose local time is skipped by DST: run at the jump, or skip.",
)
@click.option(
    "--overlap",
    type=click.Choice(get_args(OverlapRule)),
    default="once",
    show_default=True,
    help="A fixed-time job whose local time repeats at DST's end: run once, or twice.",
)
@click.option(
    "--jitter",
    metavar="DURATION",
    help="Show each instant's jitter window; with --job-id, the instant that job fires at.",
)
@click.option("--job-id", help="The job whose jitter offsets to show (they hash its id).")
@click.option(
    "--batch",
    is_flag=True,
    help='Read JSON Lines {"cron"|"every", "tz", "after", "count", "gap", "overlap"} from stdin '
    "and write one JSON array per line, in order.",
)
@click.pass_obj
def preview_command(
    obj: CliContext,
    cron_expr: str | None,
    every: str | None,
    tz: str,
    after: str | None,
    count: int,
    gap: GapRule,
    overlap: OverlapRule,
    jitter: str | None,
    job_id: str | None,
    batch: bool,
) -> None:
    """Print the next instants a cron expression or an interval fires at, in UTC.

    With an interval, the first instant is one interval after --after.
    """
    now = SystemClock().now()
    if batch:
        if cron_expr is not None or every is not None:
            raise CliError("--batch reads its schedules from stdin: drop --cron and --every")
        _run_batch(sys.stdin, now)
        return
    request: dict[str, Any] = {"tz": tz, "count": count, "gap": gap, "overlap": overlap}
    if cron_expr is not None:
        request["cron"] = cron_expr
    if every is not None:
        request["every"] = every
    if after is not None:
        request["after"] = after
    try:
        instants, zone = _preview(request, now)
    except ScheduleError as exc:
        raise CliError(str(exc)) from exc
    rows = [{"utc": format_time(instant), "local": _local(instant, zone)} for instant in instants]
    if jitter is None:
        obj.emit([row["utc"] for row in rows], table=rows, columns=["utc", "local"])
        return
    try:
        window = parse_duration(jitter)
    except ScheduleError as exc:
        raise CliError(f"--jitter: {exc}") from exc
    key = "fires_at" if job_id is not None else "fires_by"
    for row, instant in zip(rows, instants, strict=True):
        offset = window if job_id is None else jitter_offset(job_id, instant, window)
        row[key] = format_time(instant + offset)
    data = [{"at": row["utc"], key: row[key]} for row in rows]
    obj.emit(data, table=rows, columns=["utc", "local", key])


def _run_batch(lines: Iterable[str], now: datetime) -> None:
    """Answer each request as soon as it is read, so a long stream needs no memory."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"line {number}: not JSON: {exc.msg}") from exc
        if not isinstance(request, dict):
            raise CliError(f"line {number}: expected a JSON object")
        try:
            instants, _ = _preview(request, now)
        except (ScheduleError, CliError) as exc:
            raise CliError(f"line {number}: {exc}") from exc
        click.echo(json.dumps([format_time(instant) for instant in instants]))


def _preview(request: dict[str, Any], now: datetime) -> tuple[list[datetime], str]:
    """The instants one request asks for, and the zone to show them in."""
    unknown = sorted(set(request) - _BATCH_KEYS)
    if unknown:
        raise CliError(f"unknown field {unknown[0]!r}; known: {', '.join(sorted(_BATCH_KEYS))}")
    tz = validate_time_zone(_text(request, "tz", "UTC"))
    after = _instant(request["after"]) if "after" in request else now
    count = request.get("count", 5)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise CliError(f"count must be a whole number from 1 to {MAX_COUNT}")
    return preview(_schedule(request, tz, after), after, count), tz


def _schedule(request: dict[str, Any], tz: str, after: datetime) -> Schedule:
    has_cron, has_every = "cron" in request, "every" in request
    if has_cron == has_every:
        raise CliError("give exactly one of a cron expression (--cron) or an interval (--every)")
    if has_every:
        return IntervalSchedule(every=parse_duration(_text(request, "every", "")), anchor=after)
    policy = DstPolicy(gap=request.get("gap", "run"), overlap=request.get("overlap", "once"))
    return parse_cron(_text(request, "cron", ""), tz, policy)


def _text(request: dict[str, Any], key: str, default: str) -> str:
    value = request.get(key, default)
    if not isinstance(value, str):
        raise CliError(f"{key} must be a string")
    return value


def _instant(value: Any) -> datetime:
    """An RFC 3339 instant; an offset (or Z) is required, since guessing the zone is a bug."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed
    raise CliError(
        f"after must be an RFC 3339 instant with an offset, such as "
        f"2026-10-01T12:00:00Z; got {value!r}"
    )


def _local(instant: datetime, tz: str) -> str:
    zone = ZoneInfo(tz)
    return f"{format_local(instant, zone)} {instant.astimezone(zone).tzname()}"
