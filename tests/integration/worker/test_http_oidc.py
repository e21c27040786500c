"""OIDC tokens on moto's KMS: the receiver verifies the RS256 signature with the JWKS takt serves
(built from KMS's public key, checked against it here with `cryptography`), and the claims name
the issuer, the audience and the calling tenant's job. A token is reused until near its expiry."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from takt.aws import make_kms_client
from takt.models.calls import CallContext
from takt.models.targets import HttpSpec, parse_target
from takt.targets.oidc import LIFETIME_SEC, REFRESH_BEFORE_SEC, OidcSigner
from takt.wiring import Services, install
from tests.api.harness import Api
from tests.support.env import ServicesFactory
from tests.support.receiver import Receiver

ISSUER = "https://takt.example"


@pytest.fixture
def key_id(svc: Services) -> str:
    kms = make_kms_client(svc.settings)
    created = kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")
    return str(created["KeyMetadata"]["KeyId"])


@pytest.fixture
def oidc_svc(make_svc: ServicesFactory, key_id: str) -> Services:
    return make_svc(oidc_key_id=key_id, oidc_issuer=ISSUER)


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _verify(token: str, jwks: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of a token whose signature one of `jwks`'s keys verifies."""
    head, body, signature = token.split(".")
    header = json.loads(_unb64(head))
    [jwk] = [k for k in jwks["keys"] if k["kid"] == header["kid"]]
    public = rsa.RSAPublicNumbers(
        int.from_bytes(_unb64(jwk["e"]), "big"), int.from_bytes(_unb64(jwk["n"]), "big")
    ).public_key()
    public.verify(_unb64(signature), f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return header, json.loads(_unb64(body))


def _ctx() -> CallContext:
    return CallContext(
        job_id="job_1",
        execution_id="job_1.20260302T120000000Z",
        attempt=1,
        scheduled_time=datetime(2026, 3, 2, 12, tzinfo=UTC),
        payload={"n": 1},
        timeout_sec=5.0,
        tenant_id="acme",
    )


def _oidc_target(url: str, audience: str | None = None) -> HttpSpec:
    oidc = {} if audience is None else {"audience": audience}
    spec = parse_target(json.dumps({"type": "http", "url": url, "auth": {"oidc": oidc}}))
    assert isinstance(spec, HttpSpec)
    return spec


def test_the_receiver_verifies_the_token_with_takts_jwks_and_reads_who_calls(
    oidc_svc: Services, receiver: Receiver
) -> None:
    result = oidc_svc.http.call(_oidc_target(receiver.url), _ctx())

    [call] = receiver.calls
    assert oidc_svc.oidc is not None
    token = (call.header("Authorization") or "").removeprefix("Bearer ")
    header, claims = _verify(token, oidc_svc.oidc.jwks())
    assert result.outcome == "success"
    assert (header["alg"], header["typ"]) == ("RS256", "JWT")
    assert claims["iss"] == ISSUER
    assert claims["aud"] == receiver.url
    assert (claims["sub"], claims["tenant"], claims["job_id"]) == ("acme/job_1", "acme", "job_1")
    assert claims["exp"] - claims["iat"] == LIFETIME_SEC


def test_a_token_fails_verification_once_tampered_with(
    oidc_svc: Services, receiver: Receiver
) -> None:
    oidc_svc.http.call(_oidc_target(receiver.url, "billing"), _ctx())
    [call] = receiver.calls
    token = (call.header("Authorization") or "").removeprefix("Bearer ")
    head, body, signature = token.split(".")
    forged = json.loads(_unb64(body)) | {"tenant": "other"}
    forged_body = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
    assert oidc_svc.oidc is not None

    with pytest.raises(InvalidSignature):
        _verify(f"{head}.{forged_body}.{signature}", oidc_svc.oidc.jwks())
    assert _verify(token, oidc_svc.oidc.jwks())[1]["aud"] == "billing"


def test_the_jwks_holds_kms_public_key(oidc_svc: Services, key_id: str) -> None:
    assert oidc_svc.oidc is not None
    [jwk] = oidc_svc.oidc.jwks()["keys"]
    der = make_kms_client(oidc_svc.settings).get_public_key(KeyId=key_id)["PublicKey"]
    public = serialization.load_der_public_key(der)
    assert isinstance(public, rsa.RSAPublicKey)

    assert int.from_bytes(_unb64(jwk["n"]), "big") == public.public_numbers().n
    assert int.from_bytes(_unb64(jwk["e"]), "big") == public.public_numbers().e
    assert (jwk["kty"], jwk["alg"], jwk["use"]) == ("RSA", "RS256", "sig")


def test_a_token_is_reused_until_shortly_before_it_expires(oidc_svc: Services, key_id: str) -> None:
    clock = [1_800_000_000.0]
    signer = OidcSigner(
        lambda: make_kms_client(oidc_svc.settings), key_id, ISSUER, lambda: clock[0]
    )

    first = signer.token("aud", "acme", "job_1")
    clock[0] += LIFETIME_SEC - REFRESH_BEFORE_SEC - 1
    reused = signer.token("aud", "acme", "job_1")
    other_job = signer.token("aud", "acme", "job_2")
    clock[0] += 2
    renewed = signer.token("aud", "acme", "job_1")

    assert reused == first
    assert other_job != first
    assert renewed != first


def test_without_a_key_an_oidc_target_fails_without_a_call(
    svc: Services, receiver: Receiver
) -> None:
    result = svc.http.call(_oidc_target(receiver.url), _ctx())

    assert (result.outcome, result.error) == (
        "permanent",
        "oidc: this deployment has no OIDC signing key",
    )
    assert receiver.calls == []


@pytest.fixture
def api(oidc_svc: Services) -> Iterator[Api]:
    install(oidc_svc)
    try:
        yield Api(oidc_svc)
    finally:
        install(None)


def test_the_api_serves_the_jwks_to_any_reader(api: Api, oidc_svc: Services) -> None:
    answer = api.request("GET", "/v1/oidc/jwks", role="read")

    assert oidc_svc.oidc is not None
    assert answer.status == 200
    assert answer.json == oidc_svc.oidc.jwks()
