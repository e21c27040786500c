"""The region lease in memory: `RegionLeases`, with the store's conditions."""

from __future__ import annotations

from dataclasses import replace

from takt.models.regions import RegionLease
from takt.store.errors import NotFoundError


class FakeRegionLeases:
    """One lease, or none, written only as the store's conditions allow."""

    def __init__(self, lease_ms: int = 20_000) -> None:
        self.lease: RegionLease | None = None
        self._lease_ms = lease_ms

    def read(self) -> RegionLease | None:
        return self.lease

    def create(self, holder: str) -> RegionLease | None:
        if self.lease is not None:
            return None
        self.lease = RegionLease(holder, 1, 0, self._lease_ms)
        return self.lease

    def renew(self, holder: str, epoch: int) -> RegionLease | None:
        lease = self.lease
        if lease is None or lease.holder != holder or lease.epoch != epoch:
            return None
        self.lease = replace(lease, renewals=lease.renewals + 1, ttl_ms=self._lease_ms)
        return self.lease

    def take_over(self, seen: RegionLease, holder: str) -> RegionLease | None:
        if self.lease is None or self.lease.state != seen.state:
            return None
        self.lease = RegionLease(holder, seen.epoch + 1, 0, self._lease_ms)
        return self.lease

    def promote(self, holder: str) -> RegionLease:
        if self.lease is None:
            raise NotFoundError("no region lease yet: the first region's driver writes it")
        self.lease = RegionLease(holder, self.lease.epoch + 1, 0, self._lease_ms)
        return self.lease
