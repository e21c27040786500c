"""`takt quarantine ...`: records no part of takt could read or write, parked for an operator
(admin only; `GET`/`DELETE /v1/quarantine`, docs/OPERATIONS.md "Quarantined records")."""

from __future__ import annotations

from typing import Any

import click

from takt_cli.commands.client import call
from takt_cli.commands.context import CliContext

COLUMNS = ["id", "table", "key", "where", "seen", "last_at", "error"]


def _row(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": record["id"],
        "table": record["table"],
        "key": " ".join(f"{k}={v}" for k, v in sorted(record["key"].items())),
        "where": record["where"],
        "seen": record["seen"],
        "last_at": record["last_at"],
        "error": record["error"],
    }


@click.group()
def quarantine() -> None:
    """Records takt could not read or write (admin): list them, clear one once repaired."""


@quarantine.command("list")
@click.pass_obj
def list_(ctx: CliContext) -> None:
    """Every quarantined record: the item's table and key, who met it, the error, when."""
    page, _ = call(ctx, "GET", "/v1/quarantine")
    ctx.emit(page, [_row(r) for r in page["items"]], COLUMNS)


@quarantine.command("clear")
@click.argument("record_id")
@click.pass_obj
def clear(ctx: CliContext, record_id: str) -> None:
    """Once its item is repaired: put it back where it was met (a job is indexed again, an
    execution swept again) and drop the record. An item still bad is quarantined again."""
    call(ctx, "DELETE", f"/v1/quarantine/{record_id}")
    ctx.emit({"cleared": record_id}, [{"cleared": record_id}], ["cleared"])
