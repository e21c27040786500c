"""HTTP(S) targets: POST the payload as JSON, signed per Standard Webhooks when configured.

2xx succeeds; 408, 429, 5xx, connection errors and timeouts are retryable (Retry-After is
honoured by the retry policy); any other status, redirects included, is permanent.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from email.utils import parsedate_to_datetime

import urllib3

from takt.models.ids import format_time
from takt.targets.base import CallContext, TargetResult

RETRYABLE_STATUS = frozenset({408, 425, 429})


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks `webhook-signature` value (v1, HMAC-SHA256, base64)."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class HttpTarget:
    def __init__(self, signing_secret: str | None = None, pool_size: int = 32) -> None:
        self._secret = signing_secret
        self._pool = urllib3.PoolManager(maxsize=pool_size, retries=False)

    def call(self, url: str, ctx: CallContext) -> TargetResult:
        body = json.dumps(ctx.payload, separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "takt/0.1",
            "Takt-Job-Id": ctx.job_id,
            "Takt-Execution-Id": ctx.execution_id,
            "Takt-Attempt": str(ctx.attempt),
            "Takt-Scheduled-Time": format_time(ctx.scheduled_time),
            "Idempotency-Key": ctx.execution_id,
        }
        if self._secret:
            timestamp = int(time.time())
            headers["webhook-id"] = ctx.execution_id
            headers["webhook-timestamp"] = str(timestamp)
            headers["webhook-signature"] = sign(self._secret, ctx.execution_id, timestamp, body)
        started = time.monotonic()
        try:
            resp = self._pool.request(
                "POST",
                url,
                body=body,
                headers=headers,
                timeout=urllib3.Timeout(total=ctx.timeout_sec),
                redirect=False,
                preload_content=True,
            )
        except urllib3.exceptions.TimeoutError:
            return TargetResult(
                "retryable",
                error=f"timed out after {ctx.timeout_sec:g}s",
                duration_ms=_elapsed(started),
            )
        except urllib3.exceptions.HTTPError as exc:
            return TargetResult(
                "retryable",
                error=f"connection failed: {exc.__class__.__name__}",
                duration_ms=_elapsed(started),
            )
        status = resp.status
        elapsed = _elapsed(started)
        if 200 <= status < 300:
            return TargetResult("success", status_code=status, duration_ms=elapsed)
        error = f"HTTP {status}"
        if status in RETRYABLE_STATUS or status >= 500:
            return TargetResult(
                "retryable",
                status_code=status,
                error=error,
                retry_after_sec=_retry_after(resp.headers.get("Retry-After")),
                duration_ms=elapsed,
            )
        return TargetResult("permanent", status_code=status, error=error, duration_ms=elapsed)


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
