"""One action over many items on a bounded pool of threads, each in a copy of the caller's
context; and the process's foreground, which bulk work gives way to.

The work this is for waits on DynamoDB (a watchdog checking the claims' watch lists, a job
listing reading its jobs' histories), and botocore's clients are thread-safe. The context copy
matters: what the caller's context carries (`takt bench`'s meter counts a call under the
invocation its context names, the logger's keys) follows the work into the pool. The claimer
keeps a pool of its own across claims (`takt.dispatch.claimer.Phases`), which also times each
action's CPU.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def each_in_context(
    action: Callable[[T], R], items: Sequence[T], threads: int, *, name: str
) -> list[R]:
    """`action` on every item, at most `threads` at a time on threads named `name_<n>`; the
    results in order. Every action finishes before this returns, and the first failure is
    raised then. One item, or one thread, runs in the caller's thread."""
    if len(items) <= 1 or threads <= 1:
        return [action(item) for item in items]
    with ThreadPoolExecutor(min(threads, len(items)), thread_name_prefix=name) as pool:
        futures = [pool.submit(contextvars.copy_context().run, action, item) for item in items]
    return [future.result() for future in futures]


class Foreground:
    """Work that must not wait behind bulk work of the same process, and the bulk work's way of
    giving way to it.

    A deployed function runs alone in its Lambda, so nothing ever enters the foreground there
    and `give_way` returns at once. `takt local` runs every function in one process, one GIL on
    the developer's cores: its per-second scheduler tick runs in the foreground, and a
    workflow's fan-out (thousands of executions created and sent by one terminal hook) gives
    way between its chunks, so another tenant's job is claimed closer to its time
    (docs/CAPACITY.md, "Another tenant beside a fan-out").
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._clear = threading.Event()
        self._clear.set()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Run the body in the foreground: bulk work that gives way waits until it ends."""
        with self._lock:
            self._running += 1
            self._clear.clear()
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self._clear.set()

    def give_way(self, limit_sec: float) -> bool:
        """Wait while foreground work runs, `limit_sec` at most (bulk work is slowed, never
        stopped); False when the limit passed first."""
        return self._clear.wait(limit_sec)


FOREGROUND = Foreground()
"""The process's foreground (`Foreground`): entered by `takt local`'s ticker only."""
