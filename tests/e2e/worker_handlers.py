"""Handlers the `takt worker` processes of the e2e tests run (`--module tests.e2e.worker_handlers`).

Each appends what it did to a journal file named in its payload (one JSON line per event, with
its process id), which is how a test tells which worker ran which attempt, and when.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from takt.handlers import Context, handler


class Sleep(BaseModel):
    journal: str
    # How long the first start of the execution sleeps, and how long any later start does.
    first_sec: float
    then_sec: float = 0.2


class Count(BaseModel):
    count: int


class Boom(BaseModel):
    journal: str


def read_journal(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _note(path: str, ctx: Context, event: str, **fields: Any) -> None:
    line = {
        "event": event,
        "pid": os.getpid(),
        "execution_id": ctx.execution_id,
        "attempt": ctx.attempt,
        "at": time.time(),
        **fields,
    }
    with Path(path).open("a") as journal:
        journal.write(json.dumps(line) + "\n")


@handler("e2e.sleep")
def sleep(args: Sleep, ctx: Context) -> None:
    started_before = any(e["event"] == "start" for e in read_journal(Path(args.journal)))
    _note(args.journal, ctx, "start")
    stopped = ctx.wait(args.then_sec if started_before else args.first_sec)
    _note(args.journal, ctx, "end", stop_reason=ctx.stop_reason if stopped else None)


@handler("e2e.count")
def count(args: Count, ctx: Context) -> None:
    return None


@handler("e2e.boom")
def boom(args: Boom, ctx: Context) -> None:
    _note(args.journal, ctx, "start")
    raise RuntimeError("boom")
