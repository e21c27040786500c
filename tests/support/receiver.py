"""A loopback HTTP target for worker tests: records every call and answers as it is told.

It runs a real `ThreadingHTTPServer` on 127.0.0.1 with an ephemeral port (https when given a TLS
context), so the worker's HTTP client, timeouts and connection handling are exercised for real.
It answers every method the worker sends. Replies are scripted: each
request takes the next scripted reply (or the default, 200), which may carry a status, headers,
a delay, or a gate the test opens when it chooses.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `delay_sec` sleeps before answering; `gate` blocks until it is set."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_sec: float = 0.0
    gate: threading.Event | None = None
    body: bytes = b'{"ok":true}'


@dataclass(frozen=True)
class ReceivedCall:
    path: str
    headers: dict[str, str]
    body: bytes
    method: str = "POST"

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Many callers may connect at once (a worker's slots): a listen backlog of 5 refuses some.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.accepted = 0
        self._accepting = threading.Lock()

    def get_request(self) -> tuple[socket.socket, Any]:
        accepted = super().get_request()
        with self._accepting:
            self.accepted += 1
        return accepted

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out closes its socket while we still answer: expected, not noise.
        return


class Receiver:
    """Start with `with Receiver() as r:`; `r.url` is the target, `r.calls` what arrived."""

    def __init__(self, default: Reply | None = None, *, tls: ssl.SSLContext | None = None) -> None:
        self._default = default or Reply()
        self._script: deque[Reply] = deque()
        self._calls: list[ReceivedCall] = []
        self._changed = threading.Condition()
        self._closing = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            self._scheme = "https"
        # A short poll interval: `shutdown` waits up to one interval, at every test's teardown.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="receiver", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}/hook"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def connections(self) -> int:
        """How many connections the receiver has accepted: calls over one kept-alive
        connection count once."""
        with self._server._accepting:
            return self._server.accepted

    @property
    def calls(self) -> list[ReceivedCall]:
        with self._changed:
            return list(self._calls)

    def script(self, reply: Reply, times: int = 1) -> None:
        """Answer the next `times` requests (after those already scripted) with `reply`."""
        with self._changed:
            self._script.extend([reply] * times)

    def fail(self, times: int, status: int = 500) -> None:
        self.script(Reply(status=status), times)

    def wait_for_calls(self, count: int, timeout_sec: float = 5.0) -> list[ReceivedCall]:
        """Block until at least `count` calls arrived; AssertionError at the deadline."""
        deadline = time.monotonic() + timeout_sec
        with self._changed:
            while len(self._calls) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"expected {count} calls, got {len(self._calls)}")
                self._changed.wait(left)
            return list(self._calls)

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()  # releases handlers that sleep or wait on a gate
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _next_reply(self, call: ReceivedCall) -> Reply:
        with self._changed:
            self._calls.append(call)
            self._changed.notify_all()
            return self._script.popleft() if self._script else self._default

    def _wait(self, reply: Reply) -> None:
        if reply.gate is not None:
            deadline = time.monotonic() + 30
            while not reply.gate.wait(0.05) and not self._closing.is_set():
                if time.monotonic() > deadline:
                    break
        if reply.delay_sec:
            self._closing.wait(reply.delay_sec)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                reply = receiver._next_reply(
                    ReceivedCall(self.path, dict(self.headers.items()), body, self.command)
                )
                receiver._wait(reply)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            # http.server looks handlers up by the method's name.
            do_GET = do_PUT = do_PATCH = do_DELETE = do_POST  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
