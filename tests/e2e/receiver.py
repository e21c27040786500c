"""A real HTTP target on loopback for the end-to-end tests.

It records every request (path, headers, body, arrival time) and answers each path as scripted:
a list of replies used in order, then a reply for every request after them. Each test scripts
its own path, so the tests of a module can share one receiver.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One answer: a status after an optional delay (longer than a job's timeout to time out)."""

    status: int = 200
    delay_sec: float = 0.0


@dataclass(frozen=True)
class Hit:
    """One request as it arrived; `at` is the receiver's wall clock (time.time())."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    method: str = "POST"

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class _Script:
    first: list[Reply] = field(default_factory=list)
    then: Reply = field(default_factory=Reply)
    served: int = 0

    def next(self) -> Reply:
        reply = self.first[self.served] if self.served < len(self.first) else self.then
        self.served += 1
        return reply


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A caller that timed out has closed its socket before a slow answer: expected."""


class Receiver:
    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._hits: list[Hit] = []
        self._scripts: dict[str, _Script] = {}
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def path(self, first: list[Reply] | None = None, then: Reply | None = None) -> str:
        """A fresh path answered with `first` in order, then `then` (200) forever; its URL."""
        path = f"/t/{uuid.uuid4().hex[:12]}"
        with self._lock:
            self._scripts[path] = _Script(list(first or []), then or Reply())
        return self.base_url + path

    def hits(self, url: str) -> list[Hit]:
        path = url.removeprefix(self.base_url)
        with self._lock:
            return [h for h in self._hits if h.path == path]

    def wait_for(self, url: str, count: int, timeout: float) -> list[Hit]:
        """Block until `url` has had `count` requests (or the timeout passes); returns them."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._matching(url)) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
            return self._matching(url)

    def _matching(self, url: str) -> list[Hit]:
        path = url.removeprefix(self.base_url)
        return [h for h in self._hits if h.path == path]

    def _record(self, hit: Hit) -> Reply:
        with self._lock:
            self._hits.append(hit)
            script = self._scripts.setdefault(hit.path, _Script())
            reply = script.next()
            self._lock.notify_all()
        return reply

    def _handler(self) -> Callable[..., BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                hit = Hit(
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    at=time.time(),
                    method=self.command,
                )
                reply = receiver._record(hit)
                if reply.delay_sec:
                    time.sleep(reply.delay_sec)  # the scripted slow target, not a wait
                answer = b'{"ok":true}'
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the caller gave up (timed out) before the answer

            do_GET = do_PUT = do_PATCH = do_DELETE = do_POST  # noqa: N815 - http.server's names

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read the recorded hits instead."""

        return Handler
