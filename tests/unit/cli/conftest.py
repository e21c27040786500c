"""A scripted loopback HTTP server standing in for the takt API in the CLI's unit tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Received:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeApi:
    """Answers each path (without its query) with a scripted JSON body (with the status
    `statuses` gives it, else 200), and records requests."""

    url: str = ""
    answers: dict[str, Any] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    api = FakeApi()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            api.received.append(
                Received(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
            )
            path = self.path.split("?", 1)[0]
            status, body = (404, {})
            if path in api.answers:
                status, body = api.statuses.get(path, 200), api.answers[path]
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _answer  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read `received`."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    api.url = f"http://{host!s}:{port}"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
