"""The moment a worker's host must have given back what it has not finished.

A worker Lambda knows it from the start (its remaining time, less a margin to write the give-back);
a `takt worker` process learns it on SIGTERM (now plus its grace period). Runs in progress wait on
their own events; setting the deadline wakes them all, so a shutdown is noticed at once rather
than at the next heartbeat.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class HostDeadline:
    def __init__(self, at: float | None = None) -> None:
        self._at = at
        self._watchers: set[threading.Event] = set()
        self._lock = threading.Lock()

    @classmethod
    def after(cls, seconds: float) -> HostDeadline:
        return cls(time.monotonic() + seconds)

    @property
    def at(self) -> float:
        """The `time.monotonic()` instant; infinity while there is none."""
        return math.inf if self._at is None else self._at

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def set(self, at: float) -> None:
        """Move the deadline (earlier only) and wake every run waiting on it."""
        with self._lock:
            self._at = at if self._at is None else min(self._at, at)
            watchers = list(self._watchers)
        for event in watchers:
            event.set()

    @contextmanager
    def watch(self, event: threading.Event) -> Iterator[None]:
        """Set `event` whenever the deadline moves, for as long as the block runs."""
        with self._lock:
            self._watchers.add(event)
        try:
            yield
        finally:
            with self._lock:
                self._watchers.discard(event)
