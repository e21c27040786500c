"""What AWS bills for one request, computed from what the request and the items hold.

DynamoDB (on-demand): a write costs one write unit per started KB of the larger of the item's
before and after images, at least one, even when its condition fails (then the existing item's
size counts); a transactional write costs two. A read costs one unit per started 4 KB, half for
an eventually consistent read, at least one (half) even when nothing is found; a query adds up
the sizes of everything it reads before rounding. Each global secondary index that an item
enters, leaves, or changes in also costs writes: one per changed index entry of the projected
item's size, two when the index key changes (the old entry is deleted, the new one put).

SQS bills every request, and a request whose payload exceeds 64 KB as one per started 64 KB.

The sizes follow DynamoDB's documented rules: an attribute's name in UTF-8 plus its value;
strings and binaries by their length, numbers about one byte per two significant digits plus
one, booleans and nulls one byte, lists and maps three bytes plus one per element.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
SQS_CHUNK_BYTES = 64 * 1024

Item = Mapping[str, Any]
Projection = Literal["ALL", "KEYS_ONLY", "INCLUDE"]


def value_size(value: Mapping[str, Any]) -> int:
    """The size DynamoDB counts for one typed attribute value (`{"S": "..."}` and so on)."""
    ((kind, raw),) = value.items()
    if kind == "S":
        return len(str(raw).encode())
    if kind == "N":
        return _number_size(str(raw))
    if kind == "B":
        return len(raw) if isinstance(raw, bytes | bytearray) else len(base64.b64decode(raw))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in raw)
    if kind == "NS":
        return sum(_number_size(str(n)) for n in raw)
    if kind == "BS":
        return sum(
            len(b) if isinstance(b, bytes | bytearray) else len(base64.b64decode(b)) for b in raw
        )
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in raw)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in raw.items())
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def _number_size(text: str) -> int:
    digits = text.lstrip("-+").split("e")[0].split("E")[0].replace(".", "").strip("0")
    return math.ceil(max(1, len(digits)) / 2) + 1


def item_size(item: Item | None) -> int:
    """An item's size in bytes as DynamoDB counts it; 0 for no item."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    """Write units for a write whose larger image is `size` bytes (at least one)."""
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


def read_units(size: int, *, consistent: bool) -> float:
    """Read units for reading `size` bytes in one read (at least one unit, half if eventual)."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


def sqs_billed_requests(payload_bytes: int) -> int:
    """SQS bills a request per started 64 KB of payload, at least one."""
    return max(1, math.ceil(payload_bytes / SQS_CHUNK_BYTES))


@dataclass(frozen=True)
class IndexShape:
    """A global secondary index: its key attributes and what it projects."""

    name: str
    partition: str
    sort: str | None = None
    projection: Projection = "ALL"
    include: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableShape:
    """What the meter needs to know of a table: its key and its global secondary indexes."""

    partition: str
    sort: str | None = None
    indexes: tuple[IndexShape, ...] = ()

    def key_of(self, item: Item) -> dict[str, Any]:
        names = [self.partition] + ([self.sort] if self.sort else [])
        return {name: item[name] for name in names if name in item}


def _index_entry(table: TableShape, index: IndexShape, item: Item | None) -> dict[str, Any] | None:
    """The entry `item` has in `index`, or None when it lacks the index's key (sparse index)."""
    if not item or index.partition not in item or (index.sort and index.sort not in item):
        return None
    if index.projection == "ALL":
        return dict(item)
    keep = {table.partition, index.partition}
    keep |= {n for n in (table.sort, index.sort) if n}
    if index.projection == "INCLUDE":
        keep |= set(index.include)
    return {name: value for name, value in item.items() if name in keep}


def index_write_units(table: TableShape, old: Item | None, new: Item | None) -> dict[str, int]:
    """Write units each index of `table` consumes when an item goes from `old` to `new`."""
    units: dict[str, int] = {}
    for index in table.indexes:
        before = _index_entry(table, index, old)
        after = _index_entry(table, index, new)
        if before == after:
            continue
        if before is None or after is None:
            units[index.name] = write_units(item_size(before or after))
            continue
        same_key = all(
            before.get(name) == after.get(name) for name in (index.partition, index.sort) if name
        )
        if same_key:
            units[index.name] = write_units(max(item_size(before), item_size(after)))
        else:
            units[index.name] = write_units(item_size(before)) + write_units(item_size(after))
    return units
