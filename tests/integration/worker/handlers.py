"""Registered handlers the worker integration tests run; importing this module registers them.

Each test keys what it controls (a gate) and what it reads back (calls, stop reasons) by a name
of its own passed in the payload, so tests sharing the process-wide registry never meet.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass

from pydantic import BaseModel

from takt.handlers import Context, PermanentError, handler
from takt.models.calls import StopReason

_lock = threading.Lock()
_gates: dict[str, threading.Event] = defaultdict(threading.Event)


@dataclass(frozen=True)
class Call:
    key: str
    execution_id: str
    attempt: int
    stop_reason: StopReason | None = None


CALLS: list[Call] = []


def gate(key: str) -> threading.Event:
    with _lock:
        return _gates[key]


def calls(key: str) -> list[Call]:
    with _lock:
        return [c for c in CALLS if c.key == key]


def _record(key: str, ctx: Context, stop_reason: StopReason | None = None) -> None:
    with _lock:
        CALLS.append(Call(key, ctx.execution_id, ctx.attempt, stop_reason))


class Keyed(BaseModel):
    key: str


class Counted(BaseModel):
    key: str
    count: int


@handler("it.ok")
def ok(args: Keyed, ctx: Context) -> None:
    _record(args.key, ctx)


@handler("it.typed")
def typed(args: Counted, ctx: Context) -> None:
    _record(args.key, ctx)


@handler("it.fail")
def fail(args: Keyed, ctx: Context) -> None:
    _record(args.key, ctx)
    raise RuntimeError("boom")


@handler("it.refuse")
def refuse(args: Keyed, ctx: Context) -> None:
    _record(args.key, ctx)
    raise PermanentError("never works")


@handler("it.wait")
def wait(args: Keyed, ctx: Context) -> None:
    """Runs until its gate opens, or until the worker tells it to stop (recorded with why)."""
    opened = gate(args.key)
    while not opened.is_set():
        if ctx.wait(0.01):
            _record(args.key, ctx, ctx.stop_reason)
            return
    _record(args.key, ctx)


@handler("it.stubborn")
def stubborn(args: Keyed, ctx: Context) -> None:
    """Ignores every stop: only its gate ends it (the test opens it at teardown)."""
    gate(args.key).wait(30)
    _record(args.key, ctx, ctx.stop_reason)


@handler("it.wait_then_fail")
def wait_then_fail(args: Keyed, ctx: Context) -> None:
    """Fails once its gate opens: a failure that lands after a cancel but before a heartbeat."""
    gate(args.key).wait(30)
    _record(args.key, ctx, ctx.stop_reason)
    raise RuntimeError("failed after the cancel")


_barriers: dict[str, threading.Barrier] = {}


class Meeting(BaseModel):
    key: str
    parties: int


@handler("it.rendezvous")
def rendezvous(args: Meeting, ctx: Context) -> None:
    """Returns only once `parties` calls with the same key are running at the same time: calls
    run one after another break the barrier after its timeout and fail."""
    with _lock:
        barrier = _barriers.setdefault(args.key, threading.Barrier(args.parties, timeout=10))
    barrier.wait()
    _record(args.key, ctx)
