"""The API's view of the lease holder (takt.api.holder.LeaseHolder): read strongly consistently
at most once per renew period, and a lease it cannot read or that nobody holds refuses the
change with 503 rather than letting it be written locally."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.exceptions import EndpointConnectionError

from takt.api.errors import RegionUnavailableError
from takt.api.holder import LeaseHolder
from takt.clock import ManualClock
from takt.models.regions import RegionLease

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


class Lease:
    """The lease as a reader sees it, counting its reads."""

    def __init__(self, holder: str | None) -> None:
        self.holder = holder
        self.reads = 0
        self.down = False

    def read(self) -> RegionLease | None:
        self.reads += 1
        if self.down:
            raise EndpointConnectionError(endpoint_url="http://witness")
        if self.holder is None:
            return None
        return RegionLease(holder=self.holder, epoch=1, renewals=0, ttl_ms=20_000)


def test_the_holder_is_read_once_per_renew_period_and_a_new_holder_seen_after_it() -> None:
    clock, lease = ManualClock(T0), Lease("us-east-1")
    holder = LeaseHolder(lease, keep_sec=5.0, monotonic=clock.monotonic)

    seen = [holder.region(), holder.region()]
    lease.holder = "us-east-2"
    clock.advance(4.9)
    seen.append(holder.region())
    clock.advance(0.1)
    seen.append(holder.region())

    assert seen == ["us-east-1", "us-east-1", "us-east-1", "us-east-2"], (
        "the holder is kept for one renew period, then read again"
    )
    assert lease.reads == 2, "the lease is read at most once per renew period"


@pytest.mark.parametrize(
    ("holder", "down", "detail"),
    [(None, False, "no region holds"), ("us-east-1", True, "cannot be read")],
)
def test_no_holder_or_an_unreadable_lease_refuses_the_change_with_503(
    holder: str | None, down: bool, detail: str
) -> None:
    lease = Lease(holder)
    lease.down = down
    holder_view = LeaseHolder(lease, keep_sec=2.5, monotonic=ManualClock(T0).monotonic)

    with pytest.raises(RegionUnavailableError) as refused:
        holder_view.region()

    assert refused.value.status == 503
    assert refused.value.retry_after_sec == 3, "retry after the next renewal, in whole seconds"
    assert detail in refused.value.detail, "a refused change says why"
