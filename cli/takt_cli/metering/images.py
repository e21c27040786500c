"""Where the meter learns an item's before and after images, which a write's request lacks.

An update's request names only the attributes it changes, and a put's does not say what it
replaced, yet DynamoDB bills by the larger of the two images and by the index entries that
change. moto's server in the same process holds every item, so the local meter reads the images
there, right before the request is sent and right after its answer (`MotoImages`). The meter
also works without images: it then bills writes by what the request carries.
"""

from __future__ import annotations

from typing import Any, Protocol

from takt_cli.metering.units import IndexShape, Item, TableShape


class ItemImages(Protocol):
    """Reads items and table shapes as the server holds them."""

    def shape(self, table: str) -> TableShape | None: ...

    def image(self, table: str, key: Item) -> dict[str, Any] | None: ...


class MotoImages:
    """Images from moto's in-process DynamoDB backend (the local runtime's `ThreadedMotoServer`).

    A read here takes no request and changes nothing on the server; between a hook and the
    server's handling of the request another thread may write the same item, which at worst
    mis-sizes that one write.
    """

    def __init__(self, region: str, account: str | None = None) -> None:
        from moto.core.models import DEFAULT_ACCOUNT_ID  # noqa: PLC0415 - moto's internals load only when metering
        from moto.dynamodb.models import dynamodb_backends  # noqa: PLC0415 - moto's internals load only when metering

        self._backend = dynamodb_backends[account or DEFAULT_ACCOUNT_ID][region]
        self._shapes: dict[str, TableShape] = {}

    def shape(self, table: str) -> TableShape | None:
        if table not in self._shapes:
            found = self._backend.tables.get(table)
            if found is None:
                return None
            self._shapes[table] = TableShape(
                partition=found.hash_key_attr,
                sort=found.range_key_attr,
                indexes=tuple(_index_shape(index) for index in found.global_indexes),
            )
        return self._shapes[table]

    def image(self, table: str, key: Item) -> dict[str, Any] | None:
        from moto.dynamodb.models.dynamo_type import DynamoType  # noqa: PLC0415 - moto's internals load only when metering

        found = self._backend.tables.get(table)
        shape = self.shape(table)
        if found is None or shape is None or shape.partition not in key:
            return None
        range_key = DynamoType(key[shape.sort]) if shape.sort and shape.sort in key else None
        try:
            item = found.get_item(DynamoType(key[shape.partition]), range_key)
        except KeyError:
            return None
        if item is None:
            return None
        attributes: dict[str, Any] = item.to_json()["Attributes"]
        return attributes


def _index_shape(index: Any) -> IndexShape:
    keys = {k["KeyType"]: k["AttributeName"] for k in index.schema}
    projection = index.projection or {}
    return IndexShape(
        name=index.name,
        partition=keys["HASH"],
        sort=keys.get("RANGE"),
        projection=projection.get("ProjectionType", "ALL"),
        include=tuple(projection.get("NonKeyAttributes", ())),
    )
