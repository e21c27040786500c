"""What every command shares: where the API is and how to authenticate to it, how to print, and
the CLI's one error type."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import click

from takt_cli.commands.auth import Authenticator, NoAuth, authenticator
from takt_cli.commands.errors import CliError, terminal_text

__all__ = ["CliContext", "CliError", "context_of", "render_table"]


@dataclass(frozen=True)
class CliContext:
    endpoint: str
    output: str
    auth: Authenticator = field(default_factory=NoAuth)

    def emit(
        self, data: Any, table: list[dict[str, Any]] | None = None, columns: list[str] | None = None
    ) -> None:
        """Print `data` as JSON, or `table` rows as an aligned text table."""
        if self.output == "json" or table is None:
            click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))
            return
        click.echo(render_table(table, columns or (list(table[0]) if table else [])))


def context_of(params: dict[str, Any]) -> CliContext:
    """The CliContext the root options ask for; shell completion builds one from them too,
    since click does not run the root command's callback while completing."""
    endpoint = str(params["endpoint"]).rstrip("/")
    auth = authenticator(
        endpoint,
        sigv4=params.get("sigv4"),
        profile=params.get("profile"),
        region=params.get("region"),
        token=params.get("token"),
    )
    return CliContext(endpoint=endpoint, output=str(params["output"]), auth=auth)


def render_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A plain aligned table; empty cells print as '-'."""
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(widths[i]) for i, c in enumerate(columns)).rstrip()]
    lines += ["  ".join(r[i].ljust(widths[i]) for i in range(len(columns))).rstrip() for r in cells]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return "-" if value in (None, "") else terminal_text(str(value))
