"""OIDC tokens for HTTP targets: a JWT takt signs with a KMS key, which the receiver verifies.

Why this and not an identity provider: takt's workers have no identity a third party issues
tokens for (Cloud Scheduler borrows Google's, for a service account), and running an IdP for it
would be a service of its own. A KMS asymmetric key gives what a receiver needs: a private key
that never leaves KMS (a worker may ask KMS to sign, with `kms:Sign` on that one key, and can
never read it), and a public key anyone may have. The receiver checks a token as it would any
IdP's: the RS256 signature against takt's JWKS (`GET /v1/oidc/jwks`, or the same document
published where receivers fetch it), `iss`, `aud` (its own URL, or the audience the job names),
`exp`, and `sub` (`<tenant>/<job id>`: which tenant's job is calling). An RSA key in KMS never
rotates its material, so a published JWKS stays valid until the key is replaced.

A token is kept and reused for a job and audience until `REFRESH_BEFORE_SEC` before it expires,
so a busy job costs one KMS `Sign` call per ~55 minutes, not one per run (KMS charges per
request and throttles per account). The execution's own identity travels in the request's
`Takt-*` headers and its webhook signature, not in the token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from takt.targets.http import TokenError

ALGORITHM = "RS256"
KMS_ALGORITHM = "RSASSA_PKCS1_V1_5_SHA_256"
LIFETIME_SEC = 3600
REFRESH_BEFORE_SEC = 300
# Tokens kept per worker, the least recently used dropped beyond this.
MAX_CACHED = 1024
_PERMANENT_CODES = frozenset(
    {
        "AccessDeniedException",
        "NotFoundException",
        "DisabledException",
        "InvalidKeyUsageException",
        "KMSInvalidStateException",
        "ValidationException",
    }
)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _der_element(data: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at `at`."""
    tag = data[at]
    length = data[at + 1]
    start = at + 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[start : start + count], "big")
        start += count
    return tag, start, start + length


def rsa_numbers(spki: bytes) -> tuple[int, int]:
    """(modulus, exponent) of an RSA public key in DER SubjectPublicKeyInfo form, as KMS's
    GetPublicKey returns it (SEQUENCE { algorithm, BIT STRING { SEQUENCE { n, e } } })."""
    _, outer, _ = _der_element(spki, 0)
    _, _, algorithm_end = _der_element(spki, outer)
    tag, bits, _ = _der_element(spki, algorithm_end)
    if tag != 0x03:
        raise ValueError("not a SubjectPublicKeyInfo")
    _, key, _ = _der_element(spki, bits + 1)  # after the BIT STRING's unused-bits byte
    _, n_start, n_end = _der_element(spki, key)
    _, e_start, e_end = _der_element(spki, n_end)
    return int.from_bytes(spki[n_start:n_end], "big"), int.from_bytes(spki[e_start:e_end], "big")


def _unsigned(number: int) -> bytes:
    return number.to_bytes((number.bit_length() + 7) // 8, "big")


class OidcSigner:
    """Signs OIDC tokens with a KMS RSA key (`key_id`) for issuer `issuer`.

    `kms` makes the KMS client on first use; `now` is the wall clock in epoch seconds (a token's
    `iat` and `exp` are wall-clock times the receiver compares with its own).
    """

    def __init__(
        self,
        kms: Callable[[], Any],
        key_id: str,
        issuer: str,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._kms_factory = kms
        self._kms: Any = None
        self._key_id = key_id
        self._issuer = issuer
        self._now = now
        self._jwk: dict[str, str] | None = None
        self._tokens: OrderedDict[tuple[str, str, str], tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()

    def jwks(self) -> dict[str, Any]:
        """The JSON Web Key Set receivers verify tokens with (the key's public half only)."""
        return {"keys": [self._public_jwk()]}

    def token(self, audience: str, tenant_id: str, job_id: str) -> str:
        key = (audience, tenant_id, job_id)
        now = self._now()
        with self._lock:
            cached = self._tokens.get(key)
            if cached is not None and cached[0] - REFRESH_BEFORE_SEC > now:
                self._tokens.move_to_end(key)
                return cached[1]
        issued = int(now)
        expires = issued + LIFETIME_SEC
        claims = {
            "iss": self._issuer,
            "sub": f"{tenant_id}/{job_id}",
            "aud": audience,
            "iat": issued,
            "nbf": issued,
            "exp": expires,
            "tenant": tenant_id,
            "job_id": job_id,
        }
        header = {"alg": ALGORITHM, "typ": "JWT", "kid": self._public_jwk()["kid"]}
        signing_input = (
            _b64(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + _b64(json.dumps(claims, separators=(",", ":")).encode())
        )
        signature = self._call(
            "Sign",
            KeyId=self._key_id,
            Message=signing_input.encode(),
            MessageType="RAW",
            SigningAlgorithm=KMS_ALGORITHM,
        )["Signature"]
        token = f"{signing_input}.{_b64(signature)}"
        with self._lock:
            self._tokens[key] = (float(expires), token)
            while len(self._tokens) > MAX_CACHED:
                self._tokens.popitem(last=False)
        return token

    def _public_jwk(self) -> dict[str, str]:
        """The key's JWK, read from KMS once; `kid` is its RFC 7638 thumbprint."""
        if self._jwk is None:
            spki = self._call("GetPublicKey", KeyId=self._key_id)["PublicKey"]
            modulus, exponent = rsa_numbers(spki)
            n, e = _b64(_unsigned(modulus)), _b64(_unsigned(exponent))
            canonical = json.dumps({"e": e, "kty": "RSA", "n": n}, separators=(",", ":"))
            kid = _b64(hashlib.sha256(canonical.encode()).digest())
            self._jwk = {"kty": "RSA", "alg": ALGORITHM, "use": "sig", "kid": kid, "n": n, "e": e}
        return self._jwk

    def _call(self, operation: str, **kwargs: Any) -> Any:
        if self._kms is None:
            self._kms = self._kms_factory()
        method = {"Sign": self._kms.sign, "GetPublicKey": self._kms.get_public_key}[operation]
        try:
            return method(**kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", "Unknown"))
            raise TokenError(
                f"KMS {operation}: {code}", permanent=code in _PERMANENT_CODES
            ) from None
        except BotoCoreError as exc:
            raise TokenError(
                f"KMS {operation}: connection failed: {exc.__class__.__name__}", permanent=False
            ) from None
