"""The handler `bench/workers.py` runs: it does nothing, so what is measured is takt's cost."""

from __future__ import annotations

from pydantic import BaseModel

from takt.handlers import Context, handler


class Nothing(BaseModel):
    pass


@handler("bench.noop")
def noop(args: Nothing, ctx: Context) -> None:
    return None
