"""An independent SigV4 check, written from AWS's specification rather than with botocore (which
signs), so a test fails if what arrives on the wire is not what was signed."""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import quote

from tests.support.receiver import ReceivedCall


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sigv4_scope(call: ReceivedCall) -> tuple[str, str, str]:
    """(access key, region, service) from the call's Authorization header."""
    auth = call.header("Authorization") or ""
    credential = auth.split("Credential=", 1)[1].split(",", 1)[0]
    access_key, _, region, service, _ = credential.split("/")
    return access_key, region, service


def sigv4_valid(call: ReceivedCall, secret_key: str) -> bool:
    """Whether the call's signature is right for its method, path, signed headers and body."""
    auth = call.header("Authorization") or ""
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return False
    fields = dict(
        part.strip().split("=", 1) for part in auth.removeprefix("AWS4-HMAC-SHA256 ").split(",")
    )
    _, date, region, service, _ = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    path, _, query = call.path.partition("?")
    canonical_query = "&".join(sorted(query.split("&"))) if query else ""
    headers = {k.lower(): " ".join(v.split()) for k, v in call.headers.items()}
    canonical = "\n".join(
        [
            call.method,
            quote(path, safe="/-_.~"),
            canonical_query,
            "".join(f"{name}:{headers[name]}\n" for name in signed),
            fields["SignedHeaders"],
            hashlib.sha256(call.body).hexdigest(),
        ]
    )
    amz_date = headers["x-amz-date"]
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            amz_date,
            f"{date}/{region}/{service}/aws4_request",
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = _hmac(("AWS4" + secret_key).encode(), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["Signature"])
