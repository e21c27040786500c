"""A `takt worker` keeps a pooled connection to a target host for each of its slots
(`Settings.http_pool_size`, raised to `--concurrency` by `worker_settings`): with fewer, every
call beyond the pool opens a connection of its own and drops it after (over HTTPS, a TLS
handshake each). Judged by a real HTTP server on 127.0.0.1 counting the connections it accepts."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.config import Settings
from takt.models.calls import CallContext
from takt.models.targets import HttpSpec
from takt.wiring.targets import http_target
from takt_cli.commands.worker import worker_settings

NOON = datetime(2026, 3, 2, 12, tzinfo=UTC)
# More slots than the default pool's 32, all calling one host at once, twice.
SLOTS = 40
ROUNDS = 2
# Each answer waits this long, so a round's calls all hold their connections at once.
HOLD_SEC = 0.3


class _Counting(ThreadingHTTPServer):
    daemon_threads = True
    # Every slot connects at once: a listen backlog of 5 would refuse some of them.
    request_queue_size = 4 * SLOTS

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Answer)
        self.accepted = 0
        self._lock = threading.Lock()

    def get_request(self) -> tuple[socket.socket, Any]:
        accepted = super().get_request()
        with self._lock:
            self.accepted += 1
        return accepted


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(HOLD_SEC)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        return


class _NoKeys:
    """No tenant signs its calls here."""

    def signing_keys(self, tenant_id: str, now: datetime) -> list[str]:
        return []


@pytest.fixture
def server() -> Iterator[_Counting]:
    counting = _Counting()
    thread = threading.Thread(target=counting.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield counting
    finally:
        counting.shutdown()
        counting.server_close()


def _call_at_once(settings: Settings, url: str) -> list[str]:
    target = http_target(settings, ManualClock(NOON), _NoKeys(), None)  # type: ignore[arg-type]
    outcomes: list[str] = []
    for _ in range(ROUNDS):
        start = threading.Barrier(SLOTS)

        def call(slot: int, start: threading.Barrier = start) -> None:
            start.wait()
            context = CallContext(
                job_id="job-1",
                execution_id=f"ex-{slot}",
                attempt=1,
                scheduled_time=NOON,
                payload={},
                timeout_sec=10.0,
                tenant_id="t1",
            )
            outcomes.append(target.call(HttpSpec(url), context).outcome)

        threads = [threading.Thread(target=call, args=(slot,)) for slot in range(SLOTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    return outcomes


def test_a_worker_keeps_a_pooled_connection_to_a_host_for_each_of_its_slots(
    server: _Counting,
) -> None:
    deployed = Settings(egress_allow=("127.0.0.0/8",))
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"

    outcomes = _call_at_once(worker_settings(deployed, SLOTS, None), url)

    assert outcomes == ["success"] * SLOTS * ROUNDS
    assert server.accepted == SLOTS, (
        f"a worker of {SLOTS} slots calling one host at once reuses a pooled connection per "
        f"slot: {server.accepted} connections for {ROUNDS} rounds, not {SLOTS}"
    )
