"""The token bucket under real concurrency (moto's server): requests that arrive together under
the limit all pass, and racing writers never grant more than the burst."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from takt.store.buckets import TokenBuckets
from takt.wiring import Services

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def race(svc: Services, takers: int, rate: float, burst: int, bucket: str) -> int:
    """`takers` requests, each from its own process's buckets, taking one token at `NOW` at
    once; how many were granted."""
    start = threading.Barrier(takers)

    def take(_: int) -> int:
        buckets = TokenBuckets(svc.clients.dynamodb, svc.settings.tenants_table)
        start.wait()
        return buckets.take("acme", bucket, 1, rate, burst, NOW).granted

    with ThreadPoolExecutor(takers) as pool:
        return sum(pool.map(take, range(takers)))


def test_simultaneous_requests_under_the_burst_all_get_a_token(svc: Services) -> None:
    fresh = race(svc, 10, rate=50.0, burst=100, bucket="api-rate")
    in_use = race(svc, 10, rate=50.0, burst=100, bucket="api-rate")
    assert (fresh, in_use) == (10, 10), (
        "a bucket refuses no request under its limit, however many arrive together: "
        f"{10 - fresh} of 10 refused on a fresh bucket, {10 - in_use} on one in use"
    )


def test_racing_requests_past_the_burst_get_exactly_the_burst(svc: Services) -> None:
    granted = race(svc, 30, rate=1.0, burst=20, bucket="create-rate")
    assert granted == 20, (
        f"a bucket 20 deep grants 20 tokens at one instant to 30 racing requests, not {granted}"
    )
