"""The independent oracle of the region fault scenarios: a loopback receiver that records every
call takt makes with the process that made it, and the judgment of those calls.

Which region called is read from the kernel, not from takt: the receiver looks up the caller's
socket in /proc/net/tcp and finds which region's process holds it (its /proc/PID/fd), while the
connection is still open. A call from a region's process after it lost the lease is therefore seen
even if takt's own logs and counters say nothing of it.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from takt.models.ids import parse_time

UNKNOWN = "unknown"


@dataclass(frozen=True)
class Call:
    """One call to the receiver: when it arrived (monotonic), what it was for, who made it."""

    at: float
    job_id: str
    execution_id: str
    scheduled: datetime
    attempt: int
    region: str


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


class CallerReceiver:
    """`with CallerReceiver() as r:`; `r.url` the jobs' target; `r.regions` maps the regions'
    process ids to their names (set once the run has started)."""

    def __init__(self) -> None:
        self.regions: dict[int, str] = {}
        self._calls: list[Call] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                receiver._record(self)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="receiver", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def _record(self, handler: BaseHTTPRequestHandler) -> None:
        headers = handler.headers
        client_port = int(handler.client_address[1])
        call = Call(
            at=time.monotonic(),
            job_id=str(headers.get("Takt-Job-Id")),
            execution_id=str(headers.get("Takt-Execution-Id")),
            scheduled=parse_time(str(headers.get("Takt-Scheduled-Time"))),
            attempt=int(headers.get("Takt-Attempt") or 0),
            region=self._caller(client_port),
        )
        with self._lock:
            self._calls.append(call)

    def _caller(self, client_port: int) -> str:
        """The region whose process holds the client end of this connection."""
        inode = _socket_inode(client_port, int(self._server.server_address[1]))
        if inode is None:
            return UNKNOWN
        target = f"socket:[{inode}]"
        for pid, region in self.regions.items():
            try:
                fds = list(Path(f"/proc/{pid}/fd").iterdir())
            except OSError:
                continue
            for fd in fds:
                try:
                    if str(fd.readlink()) == target:
                        return region
                except OSError:
                    continue
        return UNKNOWN

    def __enter__(self) -> CallerReceiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()


def _socket_inode(local_port: int, remote_port: int) -> str | None:
    """The inode of the IPv4 socket from `local_port` to `remote_port` on loopback."""
    wanted_local = f"0100007F:{local_port:04X}"
    wanted_remote = f"0100007F:{remote_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == wanted_local and fields[2] == wanted_remote:
            return fields[9]
    return None


@dataclass
class Verdict:
    """What the calls say: occurrences never called (lost), occurrences called under two
    execution ids (a double dispatch), and occurrences called more than once (duplicates, the
    same execution id each time)."""

    occurrences: int
    lost: list[str]
    two_ids: list[str]
    duplicates: int


def judge_calls(
    calls: list[Call], jobs: Mapping[str, tuple[datetime, datetime]], every_sec: int = 1
) -> Verdict:
    """Every occurrence of each job between its (first, last) scheduled time must have a call;
    an occurrence may be called twice only with the same execution id."""
    by_occurrence: dict[tuple[str, datetime], set[str]] = defaultdict(set)
    count: dict[tuple[str, datetime], int] = defaultdict(int)
    for call in calls:
        by_occurrence[(call.job_id, call.scheduled)].add(call.execution_id)
        if call.attempt == 1:
            count[(call.job_id, call.scheduled)] += 1
    lost: list[str] = []
    total = 0
    for job_id, (first, last) in jobs.items():
        at = first
        while at <= last:
            total += 1
            if (job_id, at) not in by_occurrence:
                lost.append(f"{job_id}@{at.isoformat()}")
            at = at.fromtimestamp(at.timestamp() + every_sec, at.tzinfo)
    two_ids = [
        f"{job}@{at.isoformat()}: {ids}" for (job, at), ids in by_occurrence.items() if len(ids) > 1
    ]
    duplicates = sum(n - 1 for n in count.values() if n > 1)
    return Verdict(total, lost, two_ids, duplicates)
