"""Which region a change to an existing job is written in: the region lease's holder.

Under MREC each table's item is settled by last writer wins, and a conditional write is checked
only in the region that makes it. An edit written in a standby region's replica could therefore
meet the holder's advance of the same job only after replication, and one of the two writes
would be lost in both regions (issue 27, scenario d). Written in the holder's replica, the edit
and the advance meet under that one region's condition on the job's `version`, so one of them
is refused and made again from a fresh read (docs/ARCHITECTURE.md, "Regions").
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Protocol

from botocore.exceptions import BotoCoreError, ClientError

from takt.api.errors import RegionUnavailableError
from takt.models.regions import RegionLease


class LeaseReader(Protocol):
    def read(self) -> RegionLease | None: ...


class LeaseHolder:
    """The lease's holder, read strongly consistently and kept for `keep_sec` (the holders'
    renew period): a change of holder takes that long to reach the API, and a busy API reads
    the lease at most once per period."""

    def __init__(self, lease: LeaseReader, keep_sec: float, monotonic: Callable[[], float]) -> None:
        self._lease = lease
        self._keep_sec = keep_sec
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._seen: tuple[float, str] | None = None

    def region(self) -> str:
        """The holder's region; RegionUnavailableError when the lease cannot be read or no
        region holds it yet."""
        with self._lock:
            now = self._monotonic()
            if self._seen is not None and now - self._seen[0] < self._keep_sec:
                return self._seen[1]
            try:
                lease = self._lease.read()
            except (BotoCoreError, ClientError) as exc:
                raise RegionUnavailableError(
                    f"the region lease cannot be read ({exc}); the job is unchanged",
                    self.retry_after_sec,
                ) from exc
            if lease is None:
                raise RegionUnavailableError(
                    "no region holds the region lease yet; the job is unchanged",
                    self.retry_after_sec,
                )
            self._seen = (now, lease.holder)
            return lease.holder

    @property
    def retry_after_sec(self) -> int:
        """When a refused change can be sent again: after the holders' next renewal."""
        return max(1, math.ceil(self._keep_sec))
