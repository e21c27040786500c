"""The region lease as stored, and what the engines know of the fence around it.

One item in the `regions` table names the region that may dispatch (docs/ARCHITECTURE.md,
"Regions"). The record lives here, beside the other records, so the store that reads it and the
pure policy that decides on it (`takt.regions.lease`) share it without importing each other. The
engines see the fence only through `Fence`: they ask it for the epoch to stamp on what they write,
and it refuses (`Fenced`) when this region may not act; with one region it is `Unfenced`, which
answers None and costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RegionLease:
    """The lease item: its `holder` region, the `epoch` (the fencing token, only ever raised,
    by a take-over or a promote), how many `renewals` the holder made in this epoch (the
    watchers' sign of life; no two states of the lease are ever equal), and the lease length
    the last writer used (`ttl_ms`), shown by `takt regions status`."""

    holder: str
    epoch: int
    renewals: int
    ttl_ms: int

    @property
    def state(self) -> tuple[str, int, int]:
        """What a watcher compares: the lease changed when this did."""
        return (self.holder, self.epoch, self.renewals)


class Fenced(Exception):  # noqa: N818 - the design's shared name (docs/ARCHITECTURE.md, Regions)
    """This region may not act now: it does not hold the region lease, or its proof is too old."""


class Fence(Protocol):
    """What an acting path asks before it writes: the epoch to stamp (None with one region, where
    nothing is stamped), or `Fenced`."""

    def epoch(self) -> int | None:
        """The epoch this region acts with; raises Fenced when it may not act."""
        ...

    def step(self) -> bool:
        """A driver's second: keep (or take) the lease; whether this region may act now."""
        ...


class Unfenced:
    """The fence of a single-region deployment: always open, never read, nothing to stamp."""

    def epoch(self) -> int | None:
        return None

    def step(self) -> bool:
        """A driver's step: one region may always act."""
        return True
