"""Backoff between attempts: min(max_interval, initial_interval * 2^attempt), with full jitter.

`attempt` is the number of the attempt that just failed (1 for the first), as in the seed:
with 5 s and attempt 5, the wait is at most 160 s.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

from takt.models.records import RetryPolicy


def backoff_delay(
    policy: RetryPolicy,
    attempt: int,
    *,
    retry_after: float | None = None,
    rand: Callable[[], float] = random.random,
) -> timedelta:
    """The wait before the next attempt; a target's Retry-After is a lower bound."""
    initial = policy.initial.total_seconds()
    cap = policy.maximum.total_seconds()
    ceiling = initial if policy.backoff == "fixed" else min(cap, initial * 2.0**attempt)
    delay = ceiling * rand() if policy.jitter == "full" else ceiling
    if retry_after is not None:
        delay = max(delay, min(retry_after, cap))
    return timedelta(seconds=delay)
