"""The local API's HTTP server (`takt_cli.local.server`) refuses what API Gateway would refuse
to frame, before any request reaches the API: here served on 127.0.0.1 with a `respond` that
records what it was handed."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from takt_cli.local.server import MAX_REQUEST_BYTES, ApiServer, Reply


@dataclass
class Served:
    address: tuple[str, int]
    # (method, path, headers) of every request handed to the API.
    handed: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send `request` raw and read the whole answer (the server closes after a refusal)."""
        with socket.create_connection(self.address, timeout=5) as conn:
            conn.sendall(request)
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
                head = data.partition(b"\r\n\r\n")[0]
                if b"\r\n\r\n" in data and b"connection: close" not in head.lower():
                    break
        return int(data.split(b" ", 2)[1]), data.partition(b"\r\n\r\n")[2]


@pytest.fixture
def served() -> Iterator[Served]:
    handed: list[tuple[str, str, dict[str, str]]] = []

    def respond(method: str, path: str, headers: dict[str, str], body: bytes, _: str) -> Reply:
        handed.append((method, path, headers))
        return Reply(200, {"content-type": "application/json"}, b"{}")

    server = ApiServer(("127.0.0.1", 0), respond)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield Served((str(host), int(port)), handed)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "length", ["9" * 20, "1" + "0" * 5000, str(MAX_REQUEST_BYTES + 1)], ids=["20", "5001", "1MiB+1"]
)
def test_a_content_length_over_the_limit_is_413_whatever_its_digits(
    served: Served, length: str
) -> None:
    request = f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n{{}}"

    status, body = served.exchange(request.encode())

    assert status == 413, f"a body announced over the limit is 413 Payload Too Large: {status}"
    assert json.loads(body)["status"] == 413
    assert served.handed == []


def test_a_content_length_with_leading_zeros_is_its_number(served: Served) -> None:
    request = b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 00000000000000000002\r\n\r\n{}"

    status, _ = served.exchange(request)

    assert status == 200, "Content-Length is 1*DIGIT (RFC 9110): leading zeros keep its value"
    assert len(served.handed) == 1


@pytest.mark.parametrize(
    "line", [b"Takt-Tenant : other", b"Takt-Tenant\t: other", b"Bad Name: x"], ids=str
)
def test_a_header_line_with_whitespace_before_its_colon_is_400_never_served(
    served: Served, line: bytes
) -> None:
    request = b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + line + b"\r\nAccept: */*\r\n\r\n"

    status, body = served.exchange(request)

    assert status == 400, (
        "a header line with whitespace before the colon is refused (RFC 9112 5.1), never "
        f"served as if the headers it hides were absent (the default tenant): {status}"
    )
    assert json.loads(body)["status"] == 400
    assert served.handed == []
