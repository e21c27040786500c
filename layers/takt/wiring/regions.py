"""The region fence of this process, or none: with no `regions` set the deployment is one region
and the fence is `Unfenced`, which reads and writes nothing and stamps nothing."""

from __future__ import annotations

from collections.abc import Callable

from takt.aws import make_region_lease_client
from takt.config import Settings
from takt.models.regions import Unfenced
from takt.regions.fence import RegionFence
from takt.regions.lease import LeaseTimes
from takt.store.region_lease import RegionLeaseStore


def lease_times(settings: Settings) -> LeaseTimes:
    return LeaseTimes(
        lease_sec=settings.region_lease_sec,
        renew_sec=settings.region_renew_sec,
        margin_sec=settings.region_margin_sec,
    )


def region_lease_store(settings: Settings) -> RegionLeaseStore:
    """The lease item, through a client of its own (`takt.aws.make_region_lease_client`)."""
    return RegionLeaseStore(
        make_region_lease_client(settings),
        settings.region_lease_table,
        round(settings.region_lease_sec * 1000),
    )


def region_fence(settings: Settings, monotonic: Callable[[], float]) -> RegionFence | Unfenced:
    if not settings.regions:
        return Unfenced()
    return RegionFence(
        region_lease_store(settings),
        me=settings.region,
        initial=settings.regions[0],
        times=lease_times(settings),
        monotonic=monotonic,
    )
