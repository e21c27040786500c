"""`takt calendars ...`: a tenant's named calendars of blackout windows and holidays."""

from __future__ import annotations

from typing import Any

import click

from takt_cli.commands.client import call
from takt_cli.commands.context import CliContext, CliError
from takt_cli.commands.jobs import _load_body

COLUMNS = ["name", "time_zone", "holidays", "daily", "windows", "version"]


def _row(calendar: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": calendar["name"],
        "time_zone": calendar["time_zone"],
        "holidays": len(calendar["holidays"]),
        "daily": ", ".join(f"{d['start'][:5]}-{d['end'][:5]}" for d in calendar["daily"]),
        "windows": len(calendar["windows"]),
        "version": calendar["version"],
    }


@click.group()
def calendars() -> None:
    """Named calendars: jobs that name one skip (and record) occurrences in its windows."""


@calendars.command("put")
@click.argument("name")
@click.option("--body", help="The whole calendar as JSON, @file, or - for stdin.")
@click.option("--tz", "time_zone", help="IANA zone of its holidays and daily windows.")
@click.option("--holiday", "holidays", multiple=True, help="A local date, 2026-12-25 (repeatable).")
@click.option("--daily", multiple=True, help="A wall-clock window, 22:00-06:00 (repeatable).")
@click.option(
    "--window", "windows", multiple=True, help="An absolute window, START/END in RFC 3339."
)
@click.pass_obj
def put(
    ctx: CliContext,
    name: str,
    body: str | None,
    time_zone: str | None,
    holidays: tuple[str, ...],
    daily: tuple[str, ...],
    windows: tuple[str, ...],
) -> None:
    """Create or replace a calendar, from flags or a JSON body."""
    calendar = _load_body(body)
    if time_zone:
        calendar["time_zone"] = time_zone
    if holidays:
        calendar["holidays"] = [*calendar.get("holidays", []), *holidays]
    for text in daily:
        start, sep, end = text.partition("-")
        if not sep:
            raise CliError(f"--daily {text!r}: expected START-END, e.g. 22:00-06:00")
        calendar.setdefault("daily", []).append({"start": start, "end": end})
    for text in windows:
        start, sep, end = text.partition("/")
        if not sep:
            raise CliError(f"--window {text!r}: expected START/END in RFC 3339")
        calendar.setdefault("windows", []).append({"start": start, "end": end})
    try:
        stored, _ = call(ctx, "PUT", f"/v1/calendars/{name}", calendar)
    except CliError as exc:
        if not exc.message.startswith("404"):
            raise
        stored, _ = call(ctx, "POST", "/v1/calendars", {**calendar, "name": name})
    ctx.emit(stored, [_row(stored)], COLUMNS)


@calendars.command("list")
@click.pass_obj
def list_(ctx: CliContext) -> None:
    """The tenant's calendars."""
    page, _ = call(ctx, "GET", "/v1/calendars")
    ctx.emit(page, [_row(c) for c in page["items"]], COLUMNS)


@calendars.command("get")
@click.argument("name")
@click.pass_obj
def get(ctx: CliContext, name: str) -> None:
    """One calendar with all its windows (as JSON)."""
    calendar, _ = call(ctx, "GET", f"/v1/calendars/{name}")
    ctx.emit(calendar)


@calendars.command("delete")
@click.argument("name")
@click.pass_obj
def delete(ctx: CliContext, name: str) -> None:
    """Delete a calendar (jobs that name it then run in its former windows)."""
    call(ctx, "DELETE", f"/v1/calendars/{name}")
    ctx.emit({"deleted": name}, [{"deleted": name}], ["deleted"])
