"""`takt console`: the web console on this machine, for a deployed API.

A browser cannot sign requests with SigV4 (it has no AWS credentials, and should not), so for an
API deployed with IAM auth the console is served here and its `/v1/` calls are forwarded to
`--endpoint`, authenticated as every other `takt` command is (SigV4 from the AWS profile, or
`--token`). The credentials stay in this process; the browser only talks to loopback.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import click
import urllib3

from takt_cli.commands.context import CliContext, CliError
from takt_cli.local.console import ConsoleFiles, default_console_dir

FORWARDED_REQUEST_HEADERS = ("accept", "content-type", "if-match", "idempotency-key")
FORWARDED_ANSWER_HEADERS = ("content-type", "etag", "location")

_pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=30))


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8081, show_default=True, type=int, help="Port to listen on.")
@click.pass_obj
def console(ctx: CliContext, host: str, port: int) -> None:
    """Serve the web console here, calling the API at --endpoint as you (Ctrl-C to stop)."""
    folder = default_console_dir()
    if folder is None:
        raise CliError(
            "the console's files are not here: run takt from a checkout of its repository"
        )
    server = ThreadingHTTPServer((host, port), make_handler(ctx, ConsoleFiles(folder)))
    server.daemon_threads = True
    click.echo(f"console on http://{host}:{server.server_address[1]}/ for {ctx.endpoint}", err=True)
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def forward_target(endpoint: str, target: str) -> str:
    """The API URL for a browser's request target, its query re-encoded with %20 for a space:
    a browser writes `+`, and the signature must cover exactly the query that is sent."""
    parts = urlsplit(target)
    query = urlencode(parse_qsl(parts.query, keep_blank_values=True), quote_via=quote)
    return endpoint + parts.path + (f"?{query}" if query else "")


def make_handler(ctx: CliContext, files: ConsoleFiles) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if self.path.startswith("/v1/"):
                self._forward(body)
                return
            found = files.get(self.path) if self.command == "GET" else None
            if found is None:
                self._reply(404, {"content-type": "text/plain"}, b"not found")
                return
            self._reply(200, {"content-type": found.content_type}, found.body)

        def _forward(self, body: bytes | None) -> None:
            url = forward_target(ctx.endpoint, self.path)
            headers = {
                name: value
                for name, value in self.headers.items()
                if name.lower() in FORWARDED_REQUEST_HEADERS
            }
            try:
                headers = ctx.auth.apply(self.command, url, body, headers)
                answer = _pool.request(self.command, url, body=body, headers=headers)
            except (CliError, urllib3.exceptions.HTTPError) as exc:
                detail = exc.message if isinstance(exc, CliError) else type(exc).__name__
                problem = {"title": "Bad Gateway", "status": 502, "detail": detail}
                self._reply(
                    502, {"content-type": "application/problem+json"}, json.dumps(problem).encode()
                )
                return
            kept = {
                name.lower(): value
                for name, value in answer.headers.items()
                if name.lower() in FORWARDED_ANSWER_HEADERS
            }
            self._reply(answer.status, kept, answer.data)

        def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PATCH = do_DELETE = _handle  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the browser shows what failed."""

    return Handler
