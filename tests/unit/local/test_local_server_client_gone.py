"""A client that goes away before reading its answer (a browser tab closed while the console
loads) is normal for `takt local`'s HTTP server: it logs no traceback, only one DEBUG line."""

from __future__ import annotations

import logging
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from takt_cli.local.server import ApiServer, Reply

# Far more than the loopback socket buffers take, so writing the answer meets the closed socket.
LARGE_BODY = b"x" * (16 * 1024 * 1024)
DEADLINE_SEC = 10


class _WatchedServer(ApiServer):
    """An ApiServer that says when it has finished with a connection, error or not."""

    def __init__(self, address: tuple[str, int], respond: Any) -> None:
        super().__init__(address, respond)
        self.finished = threading.Event()

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.finished.set()


@dataclass
class Served:
    server: _WatchedServer
    address: tuple[str, int]
    client_gone: threading.Event


@pytest.fixture
def served() -> Iterator[Served]:
    client_gone = threading.Event()

    def respond(method: str, path: str, headers: dict[str, str], body: bytes, _: str) -> Reply:
        # The answer is written only once the client has closed its socket.
        client_gone.wait(DEADLINE_SEC)
        return Reply(200, {"content-type": "text/javascript"}, LARGE_BODY)

    server = _WatchedServer(("127.0.0.1", 0), respond)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield Served(server, (str(host), int(port)), client_gone)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("reset", [True, False], ids=["reset", "closed"])
def test_a_client_gone_before_its_answer_prints_no_traceback_only_a_debug_line(
    served: Served,
    reset: bool,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="takt_cli.local")
    conn = socket.create_connection(served.address, timeout=5)
    conn.sendall(b"GET /js/main.js HTTP/1.1\r\nHost: localhost\r\n\r\n")
    if reset:
        # As a browser drops a closed tab's connections: the answer's first bytes meet a reset.
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
    served.client_gone.set()

    assert served.server.finished.wait(DEADLINE_SEC), "the server never finished the connection"
    printed = capfd.readouterr().err
    assert "Traceback" not in printed and "Error" not in printed, (
        f"rule: a client gone mid-answer is normal and prints no traceback; printed: {printed}"
    )
    records = [r for r in caplog.records if r.name == "takt_cli.local"]
    lines = [r.getMessage() for r in records]
    gone = [r.levelno for r in records if "went away" in r.getMessage()]
    assert gone == [logging.DEBUG], (
        f"rule: a client gone mid-answer is one DEBUG line; logged: {lines}"
    )
