"""`--endpoint` against a deployed API: SigV4 signing with the caller's AWS credentials, chosen
for any endpoint that is not this machine, or a bearer token for a JWT deployment.

The signature is checked the way API Gateway checks it: recomputed from the request as it
arrived (method, path, query, the signed headers, body), so a difference between what was
signed and what was sent fails the test.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from takt_cli.commands.auth import BearerAuth, NoAuth, SigV4Signer, authenticator, region_of
from takt_cli.commands.main import main
from tests.unit.cli.conftest import FakeApi, Received

KEY, SECRET, TOKEN = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token"
AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/"
    r"execute-api/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def expected_signature(request: Received, base_url: str, region: str, signed: str) -> str:
    """The signature API Gateway would compute for the request as it arrived."""
    names = signed.split(";")
    arrived = AWSRequest(
        method=request.method,
        url=base_url + request.target,
        data=request.body,
        headers={name: request.headers[name] for name in names if name != "host"},
    )
    arrived.context["timestamp"] = request.headers["x-amz-date"]
    auth = SigV4Auth(Credentials(KEY, SECRET, TOKEN), "execute-api", region)
    canonical = auth.canonical_request(arrived)
    return auth.signature(auth.string_to_sign(arrived, canonical), arrived)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("credentials")
def test_sigv4_signs_a_query_and_its_signature_verifies(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [], "next_cursor": None}

    code, _, err = run(
        capsys, "--endpoint", fake_api.url, "--sigv4", "--region", "eu-west-1",
        "jobs", "list", "--name", "nightly report",
    )  # fmt: skip

    assert code == 0, err
    (request,) = fake_api.received
    match = AUTHORIZATION.match(request.headers["authorization"])
    assert match, request.headers["authorization"]
    assert (match["key"], match["region"]) == (KEY, "eu-west-1")
    assert match["date"] == datetime.strptime(
        request.headers["x-amz-date"], "%Y%m%dT%H%M%SZ"
    ).strftime("%Y%m%d")
    assert {"host", "x-amz-date", "x-amz-security-token"} <= set(match["signed"].split(";"))
    assert request.headers["x-amz-security-token"] == TOKEN
    assert "name=nightly%20report" in request.target
    assert match["signature"] == expected_signature(
        request, fake_api.url, "eu-west-1", match["signed"]
    )


@pytest.mark.usefixtures("credentials")
def test_sigv4_signs_a_body(fake_api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    fake_api.answers["/v1/jobs"] = {"id": "job_1", "schedule": None, "interval": "1h"}

    code, _, err = run(
        capsys, "-o", "json", "--endpoint", fake_api.url, "--sigv4", "--region", "us-east-1",
        "jobs", "create", "--every", "1h", "--target", "https://svc.example/x",
    )  # fmt: skip

    assert code == 0, err
    (request,) = fake_api.received
    match = AUTHORIZATION.match(request.headers["authorization"])
    assert match
    assert request.body.startswith(b"{")
    assert match["signature"] == expected_signature(
        request, fake_api.url, "us-east-1", match["signed"]
    )


def test_a_loopback_endpoint_is_not_signed(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [], "next_cursor": None}

    assert run(capsys, "--endpoint", fake_api.url, "jobs", "list")[0] == 0

    assert "authorization" not in fake_api.received[0].headers


def test_a_token_is_sent_as_a_bearer(fake_api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [], "next_cursor": None}

    assert run(capsys, "--endpoint", fake_api.url, "--token", "t0k", "jobs", "list")[0] == 0

    assert fake_api.received[0].headers["authorization"] == "Bearer t0k"


@pytest.mark.parametrize(
    ("endpoint", "kind"),
    [
        ("http://127.0.0.1:8080", NoAuth),
        ("http://localhost:8080", NoAuth),
        ("http://[::1]:8080", NoAuth),
        ("https://abc123.execute-api.eu-west-1.amazonaws.com", SigV4Signer),
        ("https://takt.example.com", SigV4Signer),
    ],
)
def test_sigv4_is_the_default_for_any_endpoint_not_on_this_machine(
    endpoint: str, kind: type
) -> None:
    chosen = authenticator(endpoint, sigv4=None, profile=None, region=None, token=None)

    assert isinstance(chosen, kind)


def test_no_sigv4_and_a_token_override_the_default() -> None:
    remote = "https://takt.example.com"

    assert isinstance(
        authenticator(remote, sigv4=False, profile=None, region=None, token=None), NoAuth
    )
    assert isinstance(
        authenticator(remote, sigv4=None, profile=None, region=None, token="t"), BearerAuth
    )


def test_the_region_comes_from_an_api_gateway_host() -> None:
    assert region_of("https://abc123.execute-api.ap-southeast-2.amazonaws.com/") == "ap-southeast-2"
    assert region_of("https://takt.example.com") is None


def test_an_unknown_profile_is_one_error_line(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "--endpoint", fake_api.url, "--sigv4", "--profile", "no-such-profile-here",
        "jobs", "list",
    )  # fmt: skip

    assert code == 1
    assert out == ""
    assert err.startswith("takt: error: cannot sign for ")
    assert "no-such-profile-here" in err
    assert len(err.splitlines()) == 1
    assert fake_api.received == []
