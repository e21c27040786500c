"""Executions run side by side: one lane poller never makes a run wait for another's call.

The target is a rendezvous: each call is answered only once `PARTIES` calls are in flight at the
same time, and fails if they never are. With a single poller per lane (`--pollers 1`) that held
each batch until its calls returned, at most one batch (10 messages) could be in flight, so the
rendezvous would break; the runtime's pollers hand batches to invocations of their own and the
worker runs a batch's messages at once, as Lambda's event source mapping and the worker do.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from takt.models.ids import format_time
from tests.e2e.harness import LocalTakt, poll

pytestmark = pytest.mark.e2e

# More than one batch of SQS messages (10), fewer than the lane's invocation slots.
PARTIES = 12
# How long a call waits for the others before it gives up and answers 500.
RENDEZVOUS_SEC = 20.0


class Rendezvous:
    """A loopback HTTP target that answers 200 to `parties` calls only when all are in flight."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=RENDEZVOUS_SEC)
        self.answers: list[int] = []
        self._lock = threading.Lock()
        target = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    target.barrier.wait()
                    status = 200
                except threading.BrokenBarrierError:
                    status = 500
                with target._lock:
                    target.answers.append(status)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/meet"

    def stop(self) -> None:
        self.barrier.abort()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def one_poller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTakt]:
    log = tmp_path_factory.mktemp("takt-local") / "takt-local.log"
    runtime = LocalTakt.start(log, "--pollers", "1")
    try:
        yield runtime
    finally:
        runtime.stop()


def test_more_runs_than_a_batch_due_at_one_instant_are_all_in_flight_at_once(
    one_poller: LocalTakt,
) -> None:
    target = Rendezvous(PARTIES)
    try:
        run_at = format_time(datetime.now(UTC) + timedelta(seconds=3))
        jobs = [
            one_poller.create_job(
                {"run_at": run_at, "target": target.url, "retry": {"max_attempts": 1}}
            )
            for _ in range(PARTIES)
        ]
        states = poll(
            lambda: [e["state"] for j in jobs for e in one_poller.executions(j["id"])],
            lambda found: (
                len(found) == PARTIES and all(s in {"succeeded", "failed", "dead"} for s in found)
            ),
            60,
            "every execution finished",
        )
    finally:
        target.stop()
    assert states == ["succeeded"] * PARTIES
    assert target.answers == [200] * PARTIES
