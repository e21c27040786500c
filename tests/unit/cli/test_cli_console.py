"""`takt console`: the console's files from here, and its API calls forwarded to the deployed
API with the CLI's authentication (the browser never holds AWS credentials)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest
import urllib3

from takt_cli.commands.auth import SigV4Signer
from takt_cli.commands.console import forward_target, make_handler
from takt_cli.commands.context import CliContext
from takt_cli.local.console import ConsoleFiles, default_console_dir
from tests.unit.cli.conftest import FakeApi


@pytest.fixture
def signed_console(fake_api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`takt console --sigv4 --region eu-west-1` in front of the fake API; its URL."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    folder = default_console_dir()
    assert folder is not None
    ctx = CliContext(
        endpoint=fake_api.url, output="table", auth=SigV4Signer(fake_api.url, None, "eu-west-1")
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(ctx, ConsoleFiles(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_page_is_served_from_here(signed_console: str, fake_api: FakeApi) -> None:
    page = urllib3.request("GET", signed_console + "/")

    assert page.status == 200
    assert b"js/main.js" in page.data
    assert fake_api.received == []


def test_api_calls_are_forwarded_signed(signed_console: str, fake_api: FakeApi) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [], "next_cursor": None}

    answer = urllib3.request("GET", signed_console + "/v1/jobs?name=nightly+report&limit=5")

    assert answer.status == 200
    assert answer.json() == {"items": [], "next_cursor": None}
    (request,) = fake_api.received
    assert request.target == "/v1/jobs?name=nightly%20report&limit=5"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in request.headers["authorization"]


def test_an_error_answer_passes_through(signed_console: str, fake_api: FakeApi) -> None:
    answer = urllib3.request("POST", signed_console + "/v1/jobs/job_x/trigger", body=b"")

    assert answer.status == 404
    assert answer.headers["content-type"] == "application/json"


def test_the_forwarded_query_spells_a_space_as_percent_20() -> None:
    assert forward_target("https://api", "/v1/jobs?name=a+b&status=") == (
        "https://api/v1/jobs?name=a%20b&status="
    )
