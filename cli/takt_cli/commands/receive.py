"""`takt receive`: a target to point a first job at, which shows what takt sends.

It prints every call it gets (method, path, takt's headers, the body), checks the Standard
Webhooks signature with the caller's tenant's keys, fetched from the API at `--endpoint`
(`GET /v1/webhook-keys`: `takt local` signs each tenant's calls with that tenant's key) or given
with `--secret`, and answers `--status` (200 by default; 500 or 429 to watch retries, 404 to see
a call fail for good). A call whose signature does not verify is answered 401; before that the
keys are fetched again, at most every `REFETCH_SEC`, so a rotation is followed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import click

from takt.clock import format_time
from takt_cli.commands.client import call
from takt_cli.commands.context import CliContext
from takt_cli.commands.errors import CliError, claim_port

# Standard Webhooks: a receiver refuses a timestamp further than this from its own clock.
TOLERANCE_SEC = 300
# How much of a body is printed.
BODY_PRINT_CHARS = 2000
# How often at most the keys are fetched again when a call does not verify.
REFETCH_SEC = 10.0
SHOWN_HEADERS = ("takt-job-id", "takt-execution-id", "takt-attempt", "takt-scheduled-time")


class Keys:
    """The keys calls are verified with: `--secret`, else the tenant's from the API."""

    def __init__(self, ctx: CliContext, secret: str | None) -> None:
        self._ctx = ctx
        self._fixed = secret
        self._lock = threading.Lock()
        self._fetched_at = -REFETCH_SEC
        self.secrets: list[str] = [secret] if secret else []
        self.source = "--secret"
        if not secret:
            self.refresh()

    def refresh(self) -> bool:
        """Fetch the tenant's keys again (not more than every REFETCH_SEC); whether it did."""

        with self._lock:
            if self._fixed or time.monotonic() - self._fetched_at < REFETCH_SEC:
                return False
            self._fetched_at = time.monotonic()
            try:
                answer, _ = call(self._ctx, "GET", "/v1/webhook-keys", read_timeout=5)
            except CliError as exc:
                self.source = f"nothing: no keys from {self._ctx.endpoint} ({exc.message})"
                return False
            self.secrets = [key["secret"] for key in answer["keys"]]
            self.source = f"tenant {answer['tenant']}'s keys from {self._ctx.endpoint}"
            return True


def problem_of(secrets: list[str], headers: dict[str, str], body: bytes, now: float) -> str | None:
    """Why the call's signature does not verify with any of `secrets`, or None when it does."""
    from takt.tenants.webhook_keys import verify  # noqa: PLC0415 - botocore costs most of a second; only receive pays it

    msg_id = headers.get("webhook-id")
    stamp = headers.get("webhook-timestamp", "")
    given = headers.get("webhook-signature")
    if not msg_id or not given or not stamp.isdigit():
        return "unsigned (no webhook-id, webhook-timestamp or webhook-signature)"
    if abs(now - int(stamp)) > TOLERANCE_SEC:
        return f"timestamp {stamp} more than {TOLERANCE_SEC}s from this clock"
    if verify(secrets, msg_id, stamp, body, given):
        return None
    return "signature does not match the keys"


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
    envvar="TAKT_RECEIVE_SECRET",
    help="Standard Webhooks key (whsec_...) to verify with (env TAKT_RECEIVE_SECRET). "
    "[default: your tenant's keys, from the API at --endpoint]",
)
@click.pass_obj
def receive(ctx: CliContext, host: str, port: int, status: int, secret: str | None) -> None:
    """Receive takt's calls: print each one, verify its signature, answer --status."""
    # A busy port is refused first, before the import and the keys' fetch take their seconds.
    claim_port(host, port)
    # Imported now, not at the first call: it pulls in botocore, and a call that waits on that
    # import may time out at the worker.
    import takt.tenants.webhook_keys  # noqa: F401, PLC0415 - botocore costs most of a second; only receive pays it

    keys = Keys(ctx, secret)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            problem = None
            if keys.secrets:
                now = time.time()
                problem = problem_of(keys.secrets, headers, body, now)
                if problem and keys.refresh():
                    problem = problem_of(keys.secrets, headers, body, now)
                check = f"signature {'INVALID: ' + problem if problem else 'ok'}"
            else:
                check = "signature not checked (no key)"
            answer = 401 if problem else status
            self._print(headers, body, answer, check)
            reply = json.dumps({"status": answer, "signature": problem or "ok"}).encode()
            self.send_response(answer)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def _print(self, headers: dict[str, str], body: bytes, answer: int, check: str) -> None:
            at = format_time(datetime.now(UTC))
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
        f"takt receive on {bound}: answers {status}; verifying signatures with {keys.source} "
        "(Ctrl-C to stop)",
        err=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.stdout.flush()
