"""Running a runner in a real thread, and waiting for its effects with a deadline (never a bare
sleep): the tests of supervision, heartbeats, cancels and lease races share these."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
POLL_SEC = 0.02


def in_thread(run: Callable[[], T]) -> tuple[threading.Thread, list[T]]:
    """Start `run` in a daemon thread; its result lands in the returned list once it returns."""
    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(run()), daemon=True)
    thread.start()
    return thread, out


def poll_until(
    check: Callable[[], bool], what: str = "condition", timeout_sec: float = 10.0
) -> None:
    """Return once `check()` holds; fail naming `what` if it does not within `timeout_sec`."""
    deadline = time.monotonic() + timeout_sec
    idle = threading.Event()  # never set: its timed wait is the polling interval
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not seen within {timeout_sec}s: {what}")
        idle.wait(POLL_SEC)
