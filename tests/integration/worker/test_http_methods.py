"""HTTP targets on a real loopback server: the job's method and headers go out as stored, GET and
DELETE carry no body, and SigV4 signs exactly what is sent (checked by an independent verifier),
again on a same-origin redirect and never across origins."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from botocore.credentials import ReadOnlyCredentials

from takt.models.calls import CallContext
from takt.models.targets import HttpSpec, parse_target
from takt.targets.egress import EgressPolicy
from takt.targets.http import HttpTarget, sign
from tests.support.receiver import Receiver, Reply
from tests.support.sigv4 import sigv4_scope, sigv4_valid
from tests.support.tls import client_context, self_signed, server_context

API_HOST = "abc123.execute-api.eu-west-1.amazonaws.com"
URL_HOST = "fn1.lambda-url.us-east-1.on.aws"
OTHER_HOST = "other.test"
SECRET_KEY = "secret-for-tests"
KEY = ReadOnlyCredentials("AKIDEXAMPLE", SECRET_KEY, "session-token")
SIGNING = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"), [API_HOST, URL_HOST, OTHER_HOST])


@pytest.fixture
def server(certificate: tuple[Path, Path]) -> Iterator[Receiver]:
    with Receiver(tls=server_context(*certificate)) as running:
        yield running


def worker(certificate: tuple[Path, Path], *, credentials: bool = True) -> HttpTarget:
    """Every test name resolves to 127.0.0.1, which the policy allows; TLS trusts the test
    certificate only."""

    def resolve(host: str, port: int) -> Sequence[str]:
        return ["127.0.0.1"]

    return HttpTarget(
        EgressPolicy(["127.0.0.1/32"], resolve),
        ssl_context=client_context(certificate[0]),
        tenant_keys=lambda tenant: [SIGNING],
        credentials=(lambda: KEY) if credentials else None,
    )


def ctx(payload: object = None) -> CallContext:
    return CallContext(
        job_id="job_1",
        execution_id="job_1.20260302T120000000Z",
        attempt=2,
        scheduled_time=datetime(2026, 3, 2, 12, tzinfo=UTC),
        payload=payload,
        timeout_sec=5.0,
        tenant_id="acme",
    )


def spec(server: Receiver, host: str, **fields: object) -> HttpSpec:
    parsed = parse_target(
        json.dumps({"type": "http", "url": f"https://{host}:{server.port}/prod/hook", **fields})
    )
    assert isinstance(parsed, HttpSpec)
    return parsed


@pytest.mark.parametrize("method", ["PUT", "PATCH", "POST"])
def test_a_body_method_sends_the_payload_with_the_jobs_headers(
    certificate: tuple[Path, Path], server: Receiver, method: str
) -> None:
    target = spec(server, OTHER_HOST, method=method, headers={"X-Team": "billing", "Accept": "*/*"})

    result = worker(certificate).call(target, ctx({"n": 1}))

    [call] = server.calls
    assert result.outcome == "success"
    assert (call.method, call.path, call.body) == (method, "/prod/hook", b'{"n":1}')
    assert call.header("X-Team") == "billing"
    assert call.header("Accept") == "*/*"
    assert call.header("Content-Type") == "application/json"
    assert call.header("Takt-Attempt") == "2"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_send_no_body_and_sign_the_empty_one(
    certificate: tuple[Path, Path], server: Receiver, method: str
) -> None:
    result = worker(certificate).call(spec(server, OTHER_HOST, method=method), ctx({"n": 1}))

    [call] = server.calls
    timestamp = int(call.header("webhook-timestamp") or 0)
    assert result.outcome == "success"
    assert (call.method, call.body) == (method, b"")
    assert call.header("Content-Type") is None
    assert call.header("webhook-signature") == sign(
        SIGNING, call.header("webhook-id") or "", timestamp, b""
    )


@pytest.mark.parametrize(
    ("host", "service", "region"),
    [(API_HOST, "execute-api", "eu-west-1"), (URL_HOST, "lambda", "us-east-1")],
)
def test_sigv4_signs_with_the_workers_credentials_for_the_service_the_host_names(
    certificate: tuple[Path, Path], server: Receiver, host: str, service: str, region: str
) -> None:
    target = spec(server, host, method="PUT", headers={"X-Team": "a"}, auth={"sigv4": {}})

    result = worker(certificate).call(target, ctx({"report": "daily"}))

    [call] = server.calls
    assert result.outcome == "success"
    assert sigv4_scope(call) == ("AKIDEXAMPLE", region, service)
    assert sigv4_valid(call, SECRET_KEY)
    assert call.header("X-Amz-Security-Token") == "session-token"
    signed = (call.header("Authorization") or "").split("SignedHeaders=")[1].split(",")[0]
    assert {"host", "x-amz-date", "x-team", "takt-execution-id"} <= set(signed.split(";"))


def test_a_signature_made_with_another_secret_does_not_verify(
    certificate: tuple[Path, Path], server: Receiver
) -> None:
    worker(certificate).call(spec(server, API_HOST, auth={"sigv4": {}}), ctx({"n": 1}))

    [call] = server.calls
    assert not sigv4_valid(call, "not-the-secret")


def test_sigv4_signs_a_same_origin_redirect_again_and_drops_the_signature_across_origins(
    certificate: tuple[Path, Path], server: Receiver
) -> None:
    server.script(Reply(status=307, headers={"Location": "/prod/moved"}))
    server.script(Reply(status=308, headers={"Location": f"https://{OTHER_HOST}:{server.port}/x"}))

    result = worker(certificate).call(spec(server, API_HOST, auth={"sigv4": {}}), ctx({"n": 1}))

    first, moved, other = server.calls
    assert result.outcome == "success"
    assert moved.path == "/prod/moved"
    assert sigv4_valid(first, SECRET_KEY)
    assert sigv4_valid(moved, SECRET_KEY)
    assert first.header("Authorization") != moved.header("Authorization")
    assert other.header("Authorization") is None
    assert other.header("X-Amz-Security-Token") is None


def test_sigv4_without_credentials_fails_without_a_call(
    certificate: tuple[Path, Path], server: Receiver
) -> None:
    result = worker(certificate, credentials=False).call(
        spec(server, API_HOST, auth={"sigv4": {}}), ctx()
    )

    assert (result.outcome, result.error) == (
        "permanent",
        "sigv4: this worker has no AWS credentials",
    )
    assert server.calls == []
