"""What every command shares: where the API is, how to print, and the CLI's one error type."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click


class CliError(Exception):
    """An error the CLI reports as one line on stderr."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


@dataclass(frozen=True)
class CliContext:
    endpoint: str
    output: str

    def emit(
        self, data: Any, table: list[dict[str, Any]] | None = None, columns: list[str] | None = None
    ) -> None:
        """Print `data` as JSON, or `table` rows as an aligned text table."""
        if self.output == "json" or table is None:
            click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))
            return
        click.echo(render_table(table, columns or list(table[0]) if table else []))


def render_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A plain aligned table; empty cells print as '-'."""
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(widths[i]) for i, c in enumerate(columns)).rstrip()]
    lines += ["  ".join(r[i].ljust(widths[i]) for i in range(len(columns))).rstrip() for r in cells]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return "-" if value in (None, "") else str(value)
