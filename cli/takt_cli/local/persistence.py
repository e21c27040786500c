"""Local data that outlives `takt local`: its DynamoDB tables, kept in a data folder.

moto's server keeps everything in memory, so `takt local` keeps its own record beside it:

- a **journal**: every DynamoDB write that moto accepted (PutItem, UpdateItem, DeleteItem,
  BatchWriteItem, TransactWriteItems), as the request that made it, one JSON line each. The line
  is written to the file before moto's answer leaves the server, so a write any caller saw
  acknowledged is in the file when the process is killed (`kill -9` included: the kernel holds
  what was written; only a power loss can take the last lines, as with a database that does not
  fsync each commit). Writes are applied and journaled one at a time, so the journal's order is
  the order moto applied them, and replaying it on the same start state rebuilds the same tables
  (DynamoDB writes depend only on the request and the item, never on a clock);
- a **snapshot**: every item of every table, written at start, at a clean stop and whenever the
  journal grows past `COMPACT_BYTES`. Snapshot and journal carry a generation number; a snapshot
  is written beside the old one and renamed into place, so a kill at any instant leaves either
  the old generation (snapshot and journal) or the new one complete.

On start the newest snapshot is loaded and its journal replayed (an unfinished last line, from a
kill in the middle of a write, was never acknowledged and is skipped). SQS is not kept: an
execution whose message was lost stays pending in the executions table, and the watchdog sends it
again, as it does for a message lost in the cloud. Items whose TTL has passed are dropped from
a snapshot, as DynamoDB would delete them (moto never does).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import urllib3

WRITE_TARGETS = frozenset(
    f"DynamoDB_20120810.{op}"
    for op in ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
)
# Past this size the journal is folded into a new snapshot, so a restart replays little.
COMPACT_BYTES = 32 * 1024 * 1024
SNAPSHOT_FORMAT = 1
_GENERATION = re.compile(r"^snapshot-(\d+)\.json$")
# An unsigned-looking SigV4 header: moto reads the service and region from it and checks nothing.
_AUTH = "AWS4-HMAC-SHA256 Credential=local/20000101/{region}/dynamodb/aws4_request, Signature=0"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class DataDirInUseError(Exception):
    """Another `takt local` holds the data folder."""


class DataStore:
    """One data folder: its lock, the snapshot and journal of the current generation."""

    def __init__(self, path: Path, compact_bytes: int = COMPACT_BYTES) -> None:
        """Takes the folder's lock at once, so a second `takt local` on it stops before it
        starts anything."""
        self.path = path
        self._tables: dict[str, str] = {}
        self._ttl: dict[str, str] = {}
        self._region = "us-east-1"
        self._compact_bytes = compact_bytes
        self._write_lock = threading.Lock()
        self._journal: IO[str] | None = None
        self._generation = 0
        self._endpoint = ""
        self._http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(total=60))
        path.mkdir(parents=True, exist_ok=True)
        self._lock_file = (path / "lock").open("w")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise DataDirInUseError(f"{path} is in use by another takt local") from None

    # The server side: every accepted write goes to the journal before its answer is sent.

    def wrap(self, app: WsgiApp) -> WsgiApp:
        """moto's WSGI app, with each DynamoDB write applied and journaled one at a time."""

        def journaled(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            if target not in WRITE_TARGETS:
                return app(environ, start_response)
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)
            answer: list[Any] = []

            def keep(status: str, headers: list[Any], exc_info: Any = None) -> Any:
                answer[:] = [status, headers, exc_info]
                return lambda data: None

            with self._write_lock:
                result = app(environ, keep)
                try:
                    payload = b"".join(result)
                finally:
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
                if self._journal is not None and answer[0].startswith("200"):
                    self._append(target, _region_of(environ), body)
            start_response(*answer)
            return [payload]

        return journaled

    def _append(self, target: str, region: str, body: bytes) -> None:
        assert self._journal is not None
        entry = {"op": target.split(".", 1)[1], "region": region, "body": json.loads(body)}
        self._journal.write(json.dumps(entry, separators=(",", ":")) + "\n")
        # Into the kernel before the answer leaves: what survives a kill -9.
        self._journal.flush()

    # Start and stop

    def open(
        self, endpoint: str, region: str, table_names: dict[str, str], ttl: dict[str, str]
    ) -> int:
        """Load the newest generation into the (empty) tables at `endpoint`, then start a new
        generation from it; returns how many items the tables hold. `table_names` maps each
        table's setting (`jobs_table`, ...) to its name, so a snapshot names tables by role;
        `ttl` maps a setting to its table's TTL attribute."""
        self._endpoint, self._region, self._tables = endpoint, region, table_names
        self._ttl = ttl
        generation = self._newest_generation()
        snapshot = self._snapshot_path(generation)
        if snapshot.exists():
            self._load_snapshot(snapshot)
        journal = self._journal_path(generation)
        if journal.exists():
            self._replay(journal)
        self._generation = generation
        return self.compact()

    def compact(self) -> int:
        """Write the tables as the next generation's snapshot and journal from there on;
        returns how many items the snapshot holds."""
        with self._write_lock:
            tables = {setting: list(self._scan(name)) for setting, name in self._tables.items()}
            generation = self._generation + 1
            snapshot = self._snapshot_path(generation)
            partial = snapshot.with_suffix(".partial")
            with partial.open("w") as out:
                json.dump({"format": SNAPSHOT_FORMAT, "tables": tables}, out)
                out.flush()
                os.fsync(out.fileno())
            partial.replace(snapshot)
            if self._journal is not None:
                self._journal.close()
            self._journal = self._journal_path(generation).open("a")
            old = self._generation
            self._generation = generation
            for stale in (self._snapshot_path(old), self._journal_path(old)):
                stale.unlink(missing_ok=True)
            return sum(len(items) for items in tables.values())

    def compact_if_large(self) -> bool:
        """Fold the journal into a new snapshot once it passed the size limit."""
        if self._journal is None or self._journal.tell() < self._compact_bytes:
            return False
        self.compact()
        return True

    def close(self) -> None:
        """Stop journaling (a clean stop compacts first) and release the folder."""
        with self._write_lock:
            if self._journal is not None:
                self._journal.close()
                self._journal = None
        fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()

    # Files

    def _snapshot_path(self, generation: int) -> Path:
        return self.path / f"snapshot-{generation}.json"

    def _journal_path(self, generation: int) -> Path:
        return self.path / f"journal-{generation}.log"

    def _newest_generation(self) -> int:
        """The generation to load: the newest complete snapshot's (0 for a new folder). Every
        journal starts after its snapshot is in place, so no journal outlives its snapshot."""
        found = (_GENERATION.match(entry.name) for entry in self.path.iterdir())
        return max((int(match.group(1)) for match in found if match), default=0)

    def _load_snapshot(self, snapshot: Path) -> None:
        document = json.loads(snapshot.read_text())
        if document.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(f"{snapshot}: unknown snapshot format {document.get('format')!r}")
        now = time.time()
        for setting, items in document["tables"].items():
            name = self._tables.get(setting)
            if name is None:
                continue
            live = [item for item in items if not _expired(item, self._ttl.get(setting), now)]
            for start in range(0, len(live), 25):
                requests = [{"PutRequest": {"Item": item}} for item in live[start : start + 25]]
                self._call("BatchWriteItem", self._region, {"RequestItems": {name: requests}})

    def _replay(self, journal: Path) -> None:
        for entry in _entries(journal):
            self._call(entry["op"], entry["region"], entry["body"], replaying=True)

    def _scan(self, table: str) -> Iterator[dict[str, Any]]:
        request: dict[str, Any] = {"TableName": table}
        while True:
            page = self._call("Scan", self._region, request)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _call(
        self, op: str, region: str, body: dict[str, Any], *, replaying: bool = False
    ) -> dict[str, Any]:
        """One DynamoDB request to moto in its wire format (no SDK: items stay as stored)."""
        resp = self._http.request(
            "POST",
            self._endpoint + "/",
            body=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": f"DynamoDB_20120810.{op}",
                "Authorization": _AUTH.format(region=region),
            },
        )
        answer: dict[str, Any] = json.loads(resp.data or b"{}")
        # A journaled write succeeded when it was made; on the same state it succeeds again.
        # One that does not means the folder's files disagree, and going on would hide it.
        if resp.status != 200:
            what = "replaying the journal" if replaying else op
            raise RuntimeError(f"{what} failed with {resp.status}: {answer}")
        return answer


def _entries(journal: Path) -> Iterator[dict[str, Any]]:
    """The journal's entries; a last line cut short by a kill was never acknowledged."""
    with journal.open() as lines:
        for line in lines:
            if not line.endswith("\n"):
                return
            yield json.loads(line)


def _region_of(environ: dict[str, Any]) -> str:
    auth = environ.get("HTTP_AUTHORIZATION", "")
    try:
        return str(auth.split(",")[0].split()[1].split("/")[2])
    except IndexError:
        return "us-east-1"  # unsigned: moto's own default region


def _expired(item: dict[str, Any], ttl_attribute: str | None, now: float) -> bool:
    if ttl_attribute is None:
        return False
    value = item.get(ttl_attribute, {}).get("N")
    return value is not None and float(value) < now
