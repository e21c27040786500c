"""https to a pinned address: the socket goes to the vetted IP while TLS sends the URL's host
name (SNI) and verifies the certificate against that name, not against the IP."""

from __future__ import annotations

import datetime as dt
import ssl
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from takt.models.calls import CallContext
from takt.models.targets import HttpSpec
from takt.targets.egress import EgressPolicy
from takt.targets.http import HttpTarget
from tests.support.tls import self_signed

NAME = "pinned.test"


class TlsServer:
    """An https server on 127.0.0.1 with a certificate for NAME; records each SNI it is sent."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.server_names: list[str | None] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.sni_callback = self._sni
        calls = self.calls = [0]

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                calls[0] += 1
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def _sni(self, sock: Any, server_name: str | None, context: Any) -> None:
        self.server_names.append(server_name)

    def __enter__(self) -> TlsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for NAME only (no IP address in it)."""
    return self_signed(tmp_path_factory.mktemp("tls"), [NAME])


@pytest.fixture
def server(certificate: tuple[Path, Path]) -> Iterator[TlsServer]:
    with TlsServer(*certificate) as s:
        yield s


def target(certificate: tuple[Path, Path]) -> HttpTarget:
    """Trusts only the test certificate; every test name resolves to 127.0.0.1."""

    def resolve(host: str, port: int) -> Sequence[str]:
        return ["127.0.0.1"]

    context = ssl.create_default_context(cafile=str(certificate[0]))
    return HttpTarget(EgressPolicy(["127.0.0.1/32"], resolve), ssl_context=context)


def ctx() -> CallContext:
    return CallContext(
        job_id="job-1",
        execution_id="ex-1",
        attempt=1,
        scheduled_time=dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC),
        payload=None,
        timeout_sec=5.0,
    )


def test_tls_sends_and_verifies_the_host_name_while_connecting_to_the_pinned_address(
    certificate: tuple[Path, Path], server: TlsServer
) -> None:
    result = target(certificate).call(HttpSpec(f"https://{NAME}:{server.port}/hook"), ctx())

    assert (result.outcome, result.status_code) == ("success", 204)
    assert server.server_names == [NAME]
    assert server.calls == [1]


def test_a_certificate_for_another_name_is_rejected_though_the_address_is_the_same(
    certificate: tuple[Path, Path], server: TlsServer
) -> None:
    result = target(certificate).call(HttpSpec(f"https://other.test:{server.port}/hook"), ctx())

    assert result.outcome == "retryable"
    assert result.error == "connection failed: SSLError"
    assert server.server_names == ["other.test"]
    assert server.calls == [0]
