"""Global tables emulated between `takt local --regions` processes (MREC: last writer wins).

Each region process keeps its own moto. DynamoDB's multi-region eventual consistency is emulated
from the tables' streams, the way the service itself replicates:

- every write to this process's moto is stamped, inside moto and under one lock with the write,
  with a write timestamp: milliseconds of the wall clock, strictly increasing in this process, and
  the name of the region that made the write. The stamp is kept beside the table (`MotoReplica`),
  never in the item, so takt reads exactly the items it wrote; the stream record carries it as
  its `ApproximateCreationDateTime` and `awsRegion`;
- each region process reads every peer's streams (`Replicator`) and applies each record whose
  `awsRegion` is that peer (a write made there) to its own moto once `delay_ms` has passed since
  the write. A record whose region is another one was itself replicated into that peer: it is
  never passed on again, so a write travels once from its region to each other;
- a replicated write is applied only when its stamp is later than the stamp of the item's last
  write here (ties broken by region name), so every region ends on the same last writer whatever
  order the writes arrive in. A delete leaves its stamp behind (a tombstone), so an older write
  arriving after it does not bring the item back. A TTL delete is a delete: it replicates as one.

The delay starts at the write, on the one machine's wall clock the processes share. A peer whose
moto refuses connections (its process was killed) loses the writes it made in its last `delay_ms`,
as a region that fails loses what it had not replicated yet; a peer that is only slow to answer
(its process paused) keeps them, and they arrive when it answers again. The stamps live in this
process's memory, which is why the regions run in memory (`takt local --regions`).

Nothing here is shipped in the Lambda layer: in AWS the global tables replicate themselves.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from takt_cli.local.streams import StreamReader

log = logging.getLogger("takt_cli.local")

# A write's stamp: (milliseconds since the epoch, the region that made it). Tuples compare in
# that order, so a later write wins and two writes in the same millisecond from two regions are
# ordered by region name, the same way in every region.
Stamp = tuple[int, str]
# The key of an item: its table and its key attributes' values, as the stream and moto show them.
ItemKey = tuple[str, str]

# How often the peers' streams are read.
POLL_SEC = 0.05
# A peer that does not answer within this long is paused, not gone: its records wait.
PEER_TIMEOUT_SEC = 2.0
ACCOUNT = "123456789012"


def _item_key(table: str, keys: Mapping[str, Any]) -> ItemKey:
    return table, repr(sorted((name, repr(value)) for name, value in keys.items()))


class MotoReplica:
    """This process's moto as one replica of the global tables: it stamps every write and
    applies a peer's write only when that write is the later one.

    One lock covers every write to moto's DynamoDB in this process, so that a replicated write's
    comparison with the item's stamp and the write itself cannot be split by a local write.
    """

    def __init__(self, region: str, clock: Callable[[], float] = time.time) -> None:
        self.region = region
        self._clock = clock
        self._lock = threading.RLock()
        self._stamps: dict[ItemKey, Stamp] = {}
        self._last_ms = 0
        # Set on the thread applying a replicated write, for the duration of that write.
        self._applying = threading.local()

    def install(self) -> None:
        """Wrap moto's DynamoDB writes in the lock and stamp each stream record. Call it once,
        before moto serves anything; moto's models are process-wide."""
        from moto.dynamodb.models import DynamoDBBackend  # noqa: PLC0415 - moto's internals load only with the local runtime
        from moto.dynamodb.models.table import StreamShard  # noqa: PLC0415 - moto's internals load only with the local runtime

        for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
            setattr(DynamoDBBackend, name, self._locked(getattr(DynamoDBBackend, name)))
        replica = self
        add = StreamShard.add

        @functools.wraps(add)
        def stamped_add(shard: Any, old: Any, new: Any) -> None:
            add(shard, old, new)
            if shard.items:
                replica._stamp(shard.table.name, shard.items[-1].record)

        setattr(StreamShard, "add", stamped_add)  # noqa: B010 - moto's class, patched in place

    def _locked(self, write: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(write)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return write(*args, **kwargs)

        return locked

    def _stamp(self, table: str, record: dict[str, Any]) -> None:
        """Give the stream record of a write its stamp: the replicated write's own, or a new one
        for a write made here."""
        stamp: Stamp | None = getattr(self._applying, "stamp", None)
        if stamp is None:
            self._last_ms = max(int(self._clock() * 1000), self._last_ms + 1)
            stamp = (self._last_ms, self.region)
        self._stamps[_item_key(table, record["dynamodb"]["Keys"])] = stamp
        record["awsRegion"] = stamp[1]
        record["dynamodb"]["ApproximateCreationDateTime"] = datetime.fromtimestamp(
            stamp[0] / 1000, UTC
        )

    def stamp_of(self, table: str, keys: Mapping[str, Any]) -> Stamp | None:
        """The stamp of the last write to this item here (a delete's included), if any."""
        with self._lock:
            return self._stamps.get(_item_key(table, keys))

    def apply(self, backend: Any, change: Change) -> bool:
        """Apply a peer's write if it is later than the item's last write here; whether it was."""
        with self._lock:
            current = self._stamps.get(_item_key(change.table, change.keys))
            if current is not None and current >= change.stamp:
                return False
            self._applying.stamp = change.stamp
            try:
                if change.image is None:
                    if backend.get_table(change.table).get_item(*_key_values(backend, change)):
                        backend.delete_item(change.table, dict(change.keys))
                    else:
                        # Nothing to delete here: the tombstone alone keeps older writes out.
                        self._stamps[_item_key(change.table, change.keys)] = change.stamp
                else:
                    backend.put_item(change.table, dict(change.image))
            finally:
                self._applying.stamp = None
            return True


def _key_values(backend: Any, change: Change) -> tuple[Any, Any]:
    """moto's hash and range key values of the changed item."""
    from moto.dynamodb.models.dynamo_type import DynamoType  # noqa: PLC0415 - moto's internals load only with the local runtime

    table = backend.get_table(change.table)
    hash_value = DynamoType(change.keys[table.hash_key_attr])
    range_value = None
    if table.range_key_attr is not None:
        range_value = DynamoType(change.keys[table.range_key_attr])
    return hash_value, range_value


@dataclass(frozen=True, order=True)
class Change:
    """One write read from a peer's stream: the item's new image, or None for a delete."""

    due: float
    seq: int
    table: str = field(compare=False)
    keys: Mapping[str, Any] = field(compare=False)
    image: Mapping[str, Any] | None = field(compare=False)
    stamp: Stamp = field(compare=False)


def change_of(table: str, record: Mapping[str, Any], delay_ms: int, seq: int) -> Change:
    """The change a stream record made, due `delay_ms` after its write."""
    data = record["dynamodb"]
    written = data["ApproximateCreationDateTime"]
    at_ms = round(written.timestamp() * 1000)
    image = data.get("NewImage") if record["eventName"] != "REMOVE" else None
    return Change(
        due=(at_ms + delay_ms) / 1000,
        seq=seq,
        table=table,
        keys=data["Keys"],
        image=image,
        stamp=(at_ms, str(record["awsRegion"])),
    )


class _Peer:
    """One peer region's moto: a reader of each table's stream, made once the peer answers."""

    def __init__(self, region: str, endpoint: str, tables: list[str]) -> None:
        self.region = region
        self._endpoint = endpoint
        self._tables = tables
        self._readers: dict[str, StreamReader] = {}

    def read(self) -> list[tuple[str, dict[str, Any]]]:
        """Every record written in this peer since the last read, with its table."""
        if not self._readers:
            self._connect()
        found: list[tuple[str, dict[str, Any]]] = []
        for table, reader in self._readers.items():
            found += [
                (table, record) for record in reader.read() if record["awsRegion"] == self.region
            ]
        return found

    def _connect(self) -> None:
        config = Config(
            connect_timeout=PEER_TIMEOUT_SEC,
            read_timeout=PEER_TIMEOUT_SEC,
            retries={"max_attempts": 1},
        )
        session = boto3.session.Session(region_name=self.region)
        dynamodb = session.client("dynamodb", endpoint_url=self._endpoint, config=config)
        streams = session.client("dynamodbstreams", endpoint_url=self._endpoint, config=config)
        self._readers = {table: StreamReader(dynamodb, streams, table) for table in self._tables}


class Replicator:
    """Reads every peer's streams and applies their writes to this region's moto after the
    replication delay, last writer winning (`MotoReplica.apply`)."""

    def __init__(
        self,
        replica: MotoReplica,
        backend: Any,
        peers: Mapping[str, str],
        tables: list[str],
        delay_ms: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._replica = replica
        self._backend = backend
        self._peers = [_Peer(region, url, tables) for region, url in peers.items()]
        self._delay_ms = delay_ms
        self._clock = clock
        self._pending: dict[str, list[Change]] = {peer.region: [] for peer in self._peers}
        self._seq = itertools.count()
        # How many peer writes were applied, and how many lost to a later write here.
        self.applied = 0
        self.superseded = 0

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(POLL_SEC):
            self.step()

    def step(self) -> None:
        """Read each peer once, then apply every change whose delay has passed."""
        for peer in self._peers:
            self._read(peer)
        now = self._clock()
        for queue in self._pending.values():
            while queue and queue[0].due <= now:
                change = heapq.heappop(queue)
                if self._replica.apply(self._backend, change):
                    self.applied += 1
                else:
                    self.superseded += 1

    def _read(self, peer: _Peer) -> None:
        try:
            records = peer.read()
        except EndpointConnectionError:
            # The peer's process is gone: what it wrote in its last delay never arrives.
            self._pending[peer.region].clear()
            return
        except (BotoCoreError, ClientError) as exc:
            log.debug("peer %s did not answer: %s", peer.region, exc)
            return
        for table, record in records:
            heapq.heappush(
                self._pending[peer.region],
                change_of(table, record, self._delay_ms, next(self._seq)),
            )


def moto_backend(region: str) -> Any:
    """This process's moto DynamoDB backend for `region` (where the runtime's tables are)."""
    from moto.dynamodb.models import dynamodb_backends  # noqa: PLC0415 - moto's internals load only with the local runtime

    return dynamodb_backends[ACCOUNT][region]
