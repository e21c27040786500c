"""The region lease store on moto: each write conditional, each answer the lease as written."""

from __future__ import annotations

import pytest

from takt.aws import AwsClients
from takt.models.regions import RegionLease
from takt.store.errors import NotFoundError
from tests.support.regions import fresh_lease_table, lease_store

EAST = "us-east-1"
WEST = "us-west-2"


def test_the_first_lease_is_written_once(clients: AwsClients) -> None:
    store = lease_store(clients, fresh_lease_table(clients))

    assert (store.read(), store.create(EAST), store.create(WEST), store.read()) == (
        None,
        RegionLease(EAST, 1, 0, 20_000),
        None,
        RegionLease(EAST, 1, 0, 20_000),
    ), "only one region writes the first lease (attribute_not_exists)"


def test_only_the_holder_at_its_epoch_renews(clients: AwsClients) -> None:
    store = lease_store(clients, fresh_lease_table(clients))
    store.create(EAST)

    assert (store.renew(EAST, 1), store.renew(WEST, 1), store.renew(EAST, 2)) == (
        RegionLease(EAST, 1, 1, 20_000),
        None,
        None,
    ), "a renewal is conditional on holder and epoch: another region or epoch renews nothing"


def test_a_take_over_needs_the_state_it_saw(clients: AwsClients) -> None:
    store = lease_store(clients, fresh_lease_table(clients))
    seen = store.create(EAST)
    assert seen is not None
    store.renew(EAST, 1)
    stale = store.take_over(seen, WEST)
    fresh = store.read()
    assert fresh is not None

    assert (stale, store.take_over(fresh, WEST), store.renew(EAST, 1)) == (
        None,
        RegionLease(WEST, 2, 0, 20_000),
        None,
    ), "a take-over loses to a renewal it did not see; once it wins, the old holder renews nothing"


def test_a_promote_moves_the_lease_to_the_next_epoch(clients: AwsClients) -> None:
    store = lease_store(clients, fresh_lease_table(clients))
    with pytest.raises(NotFoundError):
        store.promote(WEST)
    store.create(EAST)
    store.renew(EAST, 1)

    assert store.promote(WEST) == RegionLease(WEST, 2, 0, 20_000), (
        "a promote gives the lease to the region at the next epoch with no renewal yet"
    )
