"""The handlers `bench/workers.py` runs: one does nothing, so what is measured is takt's cost;
the other only waits, so its runs heartbeat."""

from __future__ import annotations

from pydantic import BaseModel

from takt.handlers import Context, handler


class Nothing(BaseModel):
    pass


@handler("bench.noop")
def noop(args: Nothing, ctx: Context) -> None:
    return None


class Pause(BaseModel):
    seconds: float


@handler("bench.sleep")
def sleep(args: Pause, ctx: Context) -> None:
    """Waits, so runs last long enough to heartbeat (and a heartbeat's cost can be measured)."""
    ctx.wait(args.seconds)
