"""The registered handlers fault scenarios aim their jobs at; importing this module registers them.

`chaos.effect` appends one line to the side-effect log named in its payload, stamped with the
scenario's true clock (the ManualClock every skewed clock derives from), and then behaves as the
payload says: succeed, raise, hold the call open for a while (real time, so heartbeats
happen), or (on its first attempt) wait on a gate the test opens.
"""

from __future__ import annotations

import threading
from pathlib import Path

from pydantic import BaseModel

from takt.clock import Clock
from takt.handlers import Context, handler
from tests.support.history import Effect, EffectLog

_lock = threading.Lock()
_clocks: dict[str, Clock] = {}
_gates: dict[str, threading.Event] = {}


class EffectArgs(BaseModel):
    log: str
    fail: bool = False
    gate: str | None = None
    hold_sec: float = 0.0


def bind(log: EffectLog, clock: Clock) -> None:
    """Stamp the side effects written to `log` with `clock` (the scenario's true time)."""
    with _lock:
        _clocks[str(log.path)] = clock


def gate(name: str) -> threading.Event:
    """The event a `gate`d call waits on (at most 30 s) before it answers."""
    with _lock:
        return _gates.setdefault(name, threading.Event())


@handler("chaos.effect")
def effect(args: EffectArgs, ctx: Context) -> None:
    with _lock:
        clock = _clocks[args.log]
    EffectLog(Path(args.log)).append(
        Effect(
            job_id=ctx.job_id,
            execution_id=ctx.execution_id,
            attempt=ctx.attempt,
            scheduled=ctx.scheduled_time,
            at=clock.now(),
        )
    )
    if args.gate is not None and ctx.attempt == 1:
        gate(args.gate).wait(30)
    if args.hold_sec:
        ctx.wait(args.hold_sec)
    if args.fail:
        raise RuntimeError("this handler always fails")
