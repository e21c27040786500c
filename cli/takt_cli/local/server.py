"""The local API's HTTP server: requests from the wire become API Gateway events, as on AWS.

API Gateway stands between a deployed API and the internet, and refuses what it cannot frame;
this server does that part for `takt local`:

- a header line that is not `name: value` (a space before the colon: RFC 9112 says refuse it), a
  `Content-Length` that is not a number of bytes, a body longer than `MAX_REQUEST_BYTES`, a
  chunked body (API Gateway buffers it; nothing here needs one) or a body that does not arrive
  within `BODY_TIMEOUT_SEC` gets a problem+json 4xx at once, and the connection is closed, since
  where the next request would start is unknown;
- HEAD is answered as GET without the body; every other method goes to the API (which answers
  OPTIONS, and a method a path does not take, with `Allow`); a request line the standard library
  cannot read gets a problem+json (never its HTML error page), and so does an HTTP/0.9 line at
  once (no version: the standard library would wait for headers that never come);
- connections are served on threads, with a listen backlog of `BACKLOG` (the standard library's
  5 reset the sixth of a burst of connections). The API handler still serves one event at a
  time (the runtime's instance lock): threads only keep connections from waiting on each other;
- a client that goes away before its answer is written (a browser tab closed while the console
  loads) is normal, not a server error: one DEBUG line, never the standard library's traceback.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("takt_cli.local")

# Above the API's own body limit (takt.api.admission.MAX_BODY_BYTES), so the API names that limit.
MAX_REQUEST_BYTES = 1024 * 1024
READ_TIMEOUT_SEC = 10
# A body announced by Content-Length arrives at once on loopback; one that has not after this
# long never will (a Content-Length larger than what was sent), and is answered 408.
BODY_TIMEOUT_SEC = 3
BACKLOG = 128
PROBLEM_JSON = "application/problem+json"


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def problem(status: int, title: str, detail: str) -> Reply:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return Reply(status, {"content-type": PROBLEM_JSON}, json.dumps(body).encode())


def reply_of(result: dict[str, Any]) -> Reply:
    """The HTTP answer of an API Gateway (payload 2.0) handler result."""
    payload = result.get("body") or ""
    raw = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode()
    headers = {k.lower(): str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name.lower()] = ", ".join(values)
    return Reply(int(result.get("statusCode", 200)), headers, raw)


# What the server does with a request: (method, path, headers, body, client address) -> answer.
Respond = Callable[[str, str, dict[str, str], bytes, str], Reply]


class _FramingError(Exception):
    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


class ApiServer(ThreadingHTTPServer):
    """A threading HTTP server with a real backlog, answering every request with `respond`."""

    request_queue_size = BACKLOG
    daemon_threads = True

    def __init__(self, address: tuple[str, int], respond: Respond) -> None:
        self.respond = respond
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The version an answer is framed in until the request line is read: the standard library's
    # "HTTP/0.9" sent the refusal of an unreadable request line as a bare body, no status line.
    default_request_version = "HTTP/1.1"
    # The socket timeout while a request's line and headers are read (an idle connection
    # kept alive is closed after it); its body has `BODY_TIMEOUT_SEC`.
    timeout = READ_TIMEOUT_SEC
    server: ApiServer
    # Set by the standard library's handle_one_request (typeshed does not declare it).
    raw_requestline: bytes

    def handle(self) -> None:
        """Serve the connection's requests; a client gone mid-answer ends it quietly."""
        try:
            super().handle()
        except ConnectionError as gone:
            self.close_connection = True
            log.debug("client %s went away mid-answer: %s", self.address_string(), gone)

    def _body(self) -> bytes:
        if "transfer-encoding" in self.headers:
            raise _FramingError(
                problem(411, "Length Required", "send the body with Content-Length")
            )
        lengths = self.headers.get_all("content-length") or []
        if not lengths:
            return b""
        text = lengths[0].strip()
        if len(set(lengths)) > 1 or not text.isascii() or not text.isdigit():
            raise _FramingError(
                problem(400, "Bad Request", "Content-Length must be one number of bytes")
            )
        # A number of any length is a size: one of more than ten digits is over the limit,
        # and is not converted (int() refuses a string of more than 4,300 digits).
        significant = text.lstrip("0") or "0"
        length = int(significant) if len(significant) <= 10 else MAX_REQUEST_BYTES + 1
        if length > MAX_REQUEST_BYTES:
            raise _FramingError(
                problem(413, "Payload Too Large", f"request body over {MAX_REQUEST_BYTES} bytes")
            )
        self.connection.settimeout(BODY_TIMEOUT_SEC)
        try:
            body = self.rfile.read(length)
        finally:
            self.connection.settimeout(READ_TIMEOUT_SEC)
        if len(body) < length:
            raise _FramingError(problem(400, "Bad Request", "the body ended before Content-Length"))
        return body

    def _handle(self, method: str | None = None) -> None:
        if self.headers.defects:
            # A line that is not `name: value` (RFC 9112 5.1: no whitespace before the colon)
            # ends the standard library's headers there, and those after it are dropped
            # unseen: serving the request would ignore a `Takt-Tenant` or `Content-Length`.
            self.close_connection = True
            self._reply(
                problem(400, "Bad Request", "a header line is not `name: value`"), close=True
            )
            return
        try:
            body = self._body()
        except _FramingError as refused:
            self.close_connection = True
            self._reply(refused.reply, close=True)
            return
        except TimeoutError:
            self.close_connection = True
            self._reply(problem(408, "Request Timeout", "the body did not arrive"), close=True)
            return
        headers = dict(self.headers.items())
        reply = self.server.respond(
            method or self.command, self.path, headers, body, self.client_address[0]
        )
        self._reply(reply, head_only=self.command == "HEAD")

    def parse_request(self) -> bool:
        """Refuse an HTTP/0.9 request line (`GET /path`, no version) at once: the standard
        library would wait for headers that such a client never sends, until the timeout."""
        self.requestline = self.raw_requestline.decode("iso-8859-1").rstrip("\r\n")
        if len(self.requestline.split()) == 2:
            self.command = ""
            self.request_version = self.default_request_version
            self.send_error(400, "HTTP/0.9 is not supported: name HTTP/1.1 in the request line")
            return False
        return super().parse_request()

    def do_HEAD(self) -> None:
        self._handle("GET")

    def __getattr__(self, name: str) -> Callable[[], None]:
        """Every other method (`do_<METHOD>`) goes to the API as it is, as API Gateway's
        `ANY` route sends it: the API answers 405 with `Allow` for a method a path does not
        take, and OPTIONS with `Allow` (the standard library would answer 501)."""
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's answer to what it cannot read (a bad request line, a header
        too long), as problem+json instead of an HTML page."""
        self.close_connection = True
        title = self.responses.get(code, ("Error",))[0]
        self._reply(problem(code, title, message or explain or title), close=True)

    def _reply(self, reply: Reply, *, head_only: bool = False, close: bool = False) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            if name != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        if not head_only and reply.status not in (204, 304):
            self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)
