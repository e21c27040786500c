"""The api handler served over HTTP on 127.0.0.1, so the CLI's own client can drive the real API
(handler, models, tables on moto) in a test, without starting a whole `takt local`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.api.harness import Api


@contextmanager
def served(api: Api) -> Iterator[str]:
    """The base URL of an HTTP server answering every request through `api`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            if body:
                headers.setdefault("content-type", "application/json")
            resp = api.request(self.command, self.path, raw=body or None, headers=headers)
            data = resp.text.encode()
            self.send_response(resp.status)
            for name, value in resp.headers.items():
                if name not in ("content-length", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read the CLI's output."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield f"http://{host!s}:{port}"
    finally:
        server.shutdown()
        server.server_close()
