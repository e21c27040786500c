"""`takt receive`: a target to point a first job at, which shows what takt sends.

It prints every call it gets (method, path, takt's headers, the body), checks the Standard
Webhooks signature with the key `takt local` signs with (the `signing-key` file in its data
folder) or `--secret`, and answers `--status` (200 by default; 500 or 429 to watch retries, 404
to see a call fail for good). A call whose signature does not verify is answered 401.
"""

from __future__ import annotations

import hmac
import json
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click

from takt.cli.local import DEFAULT_DATA_DIR

# Standard Webhooks: a receiver refuses a timestamp further than this from its own clock.
TOLERANCE_SEC = 300
# How much of a body is printed.
BODY_PRINT_CHARS = 2000
SHOWN_HEADERS = ("takt-job-id", "takt-execution-id", "takt-attempt", "takt-scheduled-time")


def signing_key(secret: str | None, data_dir: Path) -> tuple[str | None, str]:
    """The key to verify with and where it came from: --secret (or TAKT_SIGNING_SECRET), else
    the key `takt local` keeps in its data folder, else none."""
    if secret:
        return secret, "--secret"
    path = data_dir / "signing-key"
    if path.is_file():
        return path.read_text().strip(), str(path)
    return None, "no key"


def verify(key: str, headers: dict[str, str], body: bytes, now: float) -> str | None:
    """Why the call's signature does not verify, or None when it does."""
    from takt.targets.http import sign

    msg_id = headers.get("webhook-id")
    stamp = headers.get("webhook-timestamp", "")
    given = headers.get("webhook-signature")
    if not msg_id or not given or not stamp.isdigit():
        return "unsigned (no webhook-id, webhook-timestamp or webhook-signature)"
    if abs(now - int(stamp)) > TOLERANCE_SEC:
        return f"timestamp {stamp} more than {TOLERANCE_SEC}s from this clock"
    expected = sign(key, msg_id, int(stamp), body)
    if any(hmac.compare_digest(expected, s) for s in given.split()):
        return None
    return "signature does not match the key"


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=9001, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--status",
    default=200,
    show_default=True,
    type=click.IntRange(200, 599),
    help="Status to answer every verified call with (e.g. 500 to watch takt retry).",
)
@click.option(
    "--secret",
    envvar="TAKT_SIGNING_SECRET",
    help="Standard Webhooks key (whsec_...) to verify with (env TAKT_SIGNING_SECRET). "
    "[default: the signing-key file in takt local's data folder]",
)
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
    envvar="TAKT_LOCAL_DATA",
    help="takt local's data folder, whose signing key is used.",
)
def receive(host: str, port: int, status: int, secret: str | None, data_dir: Path) -> None:
    """Receive takt's calls: print each one, verify its signature, answer --status."""
    key, source = signing_key(secret, data_dir)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            if key is None:
                problem, answer = None, status
                check = "signature not checked (no key)"
            else:
                problem = verify(key, headers, body, time.time())
                answer = 401 if problem else status
                check = f"signature {'INVALID: ' + problem if problem else 'ok'}"
            self._print(headers, body, answer, check)
            reply = json.dumps({"status": answer, "signature": problem or "ok"}).encode()
            self.send_response(answer)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def _print(self, headers: dict[str, str], body: bytes, answer: int, check: str) -> None:
            at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            takt = " ".join(f"{h}={headers[h]}" for h in SHOWN_HEADERS if h in headers)
            text = body.decode(errors="replace")
            if len(text) > BODY_PRINT_CHARS:
                text = text[:BODY_PRINT_CHARS] + f"... ({len(body)} bytes)"
            with lock:
                click.echo(f"{at} {self.command} {self.path} -> {answer}, {check}")
                if takt:
                    click.echo(f"  {takt}")
                click.echo(f"  body: {text or '(empty)'}")

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: `_print` says everything, once."""

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    bound = f"http://{host}:{server.server_address[1]}/"
    click.echo(
        f"takt receive on {bound}: answers {status}; verifying signatures with "
        f"{source if key else 'nothing (no --secret, no takt local data folder)'} (Ctrl-C to stop)",
        err=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.stdout.flush()
