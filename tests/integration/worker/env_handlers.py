"""A handler module only the worker Lambda test loads, through TAKT_HANDLER_MODULES."""

from __future__ import annotations

from pydantic import BaseModel

from takt.handlers import Context, handler

runs: list[str] = []


class Empty(BaseModel):
    pass


@handler("it.from_env")
def from_env(args: Empty, ctx: Context) -> None:
    runs.append(ctx.execution_id)
