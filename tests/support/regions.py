"""A region lease table on moto, for the tests of the lease store and the fence."""

from __future__ import annotations

import uuid

from takt.aws import AwsClients
from takt.resources import REGIONS
from takt.store.region_lease import RegionLeaseStore


def fresh_lease_table(clients: AwsClients) -> str:
    """A new, empty `regions` table (from `takt.resources.REGIONS`), by name."""
    name = f"regions-{uuid.uuid4().hex[:8]}"
    clients.dynamodb.create_table(**REGIONS.create_table_kwargs(name))
    return name


def lease_store(clients: AwsClients, table: str, lease_ms: int = 20_000) -> RegionLeaseStore:
    return RegionLeaseStore(clients.dynamodb, table, lease_ms)
