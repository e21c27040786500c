"""Jitter: where inside [t, t + jitter) an occurrence of a job fires.

The offset is a hash of (job id, nominal instant), not a random draw, so every claimer, retry and
re-claim of one occurrence computes the same firing time, and the occurrence keeps its nominal
instant as its identity (its execution id). Jobs due at the same nominal instant (the top of the
hour) spread evenly over the window, because the hash spreads them.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

_MILLISECOND = timedelta(milliseconds=1)


def jitter_offset(job_id: str, nominal: datetime, jitter: timedelta) -> timedelta:
    """How far after `nominal` the occurrence fires: whole milliseconds in [0, jitter)."""
    span = jitter // _MILLISECOND
    if span <= 0:
        return timedelta(0)
    instant = nominal.astimezone(UTC).isoformat(timespec="milliseconds")
    digest = hashlib.sha256(f"{job_id}\n{instant}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % span * _MILLISECOND
