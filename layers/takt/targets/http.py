"""HTTP(S) targets: send the payload as JSON with the job's method and headers, signed per Standard
Webhooks with the tenant's key, and with SigV4 or an OIDC token when the target asks.

POST, PUT and PATCH carry the payload as the body; GET and DELETE carry none (their webhook
signature covers the empty body). 2xx succeeds; 408, 425, 429, 5xx, connection errors and
timeouts are retryable (Retry-After is honoured by the retry policy); any other status is
permanent.

Egress (docs/SECURITY.md): before each request the host is resolved once and every address is
checked against the deployment's `EgressPolicy`; the socket then connects to a vetted address
itself, while the request carries the URL's Host header and TLS uses the host name for SNI and
certificate checks. A name that resolves differently a moment later (DNS rebinding) is never
looked up again for that request. A refused target is a permanent failure: retrying would be
refused the same way.

Redirects: 307 and 308 keep the method and body, so they are followed, up to `MAX_REDIRECTS`
hops, each hop resolved and checked again like the first. A hop to another origin drops the
credentials (the bearer token, the secret headers, the OIDC token and the SigV4 signature), and
https never downgrades to http; a hop within the origin is signed again for its own path. 301,
302 and 303 may turn the request into a GET: they stay permanent, as a sign the job's URL needs
fixing.

Secrets: the bearer token, secret headers and per-job signing key are read by name at call time
(`takt.targets.secrets`), checked against the tenant's prefix first; their values go into the
request only, never into a result, a log line or the execution's history.

SigV4 (`auth.sigv4`) signs each request with the worker's own AWS credentials (its role), for
IAM-protected API Gateway routes and Lambda function URLs; OIDC (`auth.oidc`) sends a token
takt signs (`takt.targets.oidc`), which the receiver verifies against takt's published keys.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Protocol
from urllib.parse import SplitResult, urljoin, urlsplit

import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

from takt.models.calls import CallContext, Outcome, TargetResult
from takt.models.ids import format_time
from takt.models.targets import BODY_METHODS, HttpSpec, SigV4, header_problem
from takt.observability import logger
from takt.targets.egress import EgressPolicy, EgressRefusedError, EgressResolveError
from takt.targets.secrets import SecretError, SecretSource, name_problem

RETRYABLE_STATUS = frozenset({408, 425, 429})
FOLLOWED_REDIRECTS = frozenset({307, 308})
MAX_REDIRECTS = 3
# Pools are per vetted address; the least recently used beyond this many are closed.
MAX_POOLS = 64
_DEFAULT_PORTS = {"http": 80, "https": 443}
# The headers SigV4 adds; like the other credentials they never cross to another origin.
_SIGV4_HEADERS = frozenset(
    {"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"}
)
# The worker's AWS credentials for SigV4, frozen at the moment of signing (None: it has none).
CredentialSource = Callable[[], ReadOnlyCredentials | None]


class TokenSource(Protocol):
    """Where OIDC tokens come from (`takt.targets.oidc.OidcSigner`, or a fake in tests)."""

    def token(self, audience: str, tenant_id: str, job_id: str) -> str: ...


class TokenError(Exception):
    """An OIDC token could not be made. `permanent`: retrying cannot help (no key configured,
    access denied); otherwise (throttling, the network) a later attempt may succeed."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks `webhook-signature` value (v1, HMAC-SHA256, base64)."""
    key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
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


class _NotCalledError(Exception):
    """Ends a call early with its result: the egress policy, a secret or a redirect rule said
    no, or a name or secret could not be read."""

    def __init__(self, result: TargetResult) -> None:
        super().__init__(result.error)
        self.result = result


class HttpTarget:
    """Calls HTTP targets through the egress policy, with the secrets they name.

    Without a policy every non-public address is refused (the deployed default); without a
    secret source, a target that names a secret fails permanently.
    """

    def __init__(
        self,
        policy: EgressPolicy | None = None,
        secrets: SecretSource | None = None,
        *,
        tenant_keys: Callable[[str], list[str]] | None = None,
        secret_prefix: str = "takt/",  # noqa: S107 - a name prefix, not a password
        pool_size: int = 32,
        ssl_context: ssl.SSLContext | None = None,
        credentials: CredentialSource | None = None,
        tokens: TokenSource | None = None,
    ) -> None:
        self._policy = policy or EgressPolicy()
        self._secrets = secrets
        self._tenant_keys = tenant_keys
        self._secret_prefix = secret_prefix
        self._pool_size = pool_size
        self._ssl_context = ssl_context
        self._credentials = credentials
        self._tokens = tokens
        self._pools: OrderedDict[tuple[str, str, int, str], urllib3.HTTPConnectionPool] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def call(self, spec: HttpSpec, ctx: CallContext) -> TargetResult:
        started = time.monotonic()
        body = (
            json.dumps(ctx.payload, separators=(",", ":")).encode()
            if spec.method in BODY_METHODS
            else b""
        )
        try:
            headers, credentials = self._headers(spec, ctx, body)
            return self._follow(spec, body, headers, credentials, ctx, started)
        except _NotCalledError as refused:
            result = refused.result
            logger.warning(
                "http target not called",
                execution_id=ctx.execution_id,
                job_id=ctx.job_id,
                reason=result.error,
            )
            return TargetResult(
                result.outcome,
                status_code=result.status_code,
                error=result.error,
                duration_ms=_elapsed(started),
            )

    def _follow(
        self,
        spec: HttpSpec,
        body: bytes,
        headers: dict[str, str],
        credentials: set[str],
        ctx: CallContext,
        started: float,
    ) -> TargetResult:
        url = spec.url
        origin = _origin(urlsplit(url))
        hops = 0
        while True:
            parts = urlsplit(url)
            sigv4 = spec.sigv4 if _origin(parts) == origin else None
            try:
                resp = self._send(parts, spec.method, body, headers, ctx, sigv4)
            except _NotCalledError as refused:
                if hops == 0:
                    raise
                result = refused.result
                raise _NotCalledError(
                    TargetResult(result.outcome, error=f"{result.error} (after {hops} redirects)")
                ) from None
            except urllib3.exceptions.NewConnectionError as exc:
                # Caught before TimeoutError, which urllib3 makes its base class: a refused
                # connection fails at once and must not read as the job's timeout.
                return TargetResult(
                    "retryable",
                    error=_connection_problem(exc),
                    duration_ms=_elapsed(started),
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
            following = _redirect(resp, url, parts, hops)
            if following is None:
                return _outcome(resp, started)
            if _origin(following) != _origin(parts):
                headers = {k: v for k, v in headers.items() if k.lower() not in credentials}
            if ctx.stop.is_set():
                # The worker stopped waiting (a lost lease, a timeout, a cancel): following now
                # would be a new call that nobody watches, possibly beside the next attempt's.
                return TargetResult(
                    "retryable",
                    error=f"stopped ({ctx.stop.reason}) before following a redirect",
                    duration_ms=_elapsed(started),
                )
            url = following.geturl()
            hops += 1

    def _send(
        self,
        parts: SplitResult,
        method: str,
        body: bytes,
        headers: dict[str, str],
        ctx: CallContext,
        sigv4: SigV4 | None,
    ) -> urllib3.BaseHTTPResponse:
        """One request, to the first vetted address of the URL's host that accepts a
        connection (a refused connection sent nothing, so the next address is safe to try).
        With `sigv4` it is signed for exactly what is sent: its method, path, Host and body."""
        host = parts.hostname or ""
        try:
            port = parts.port or _DEFAULT_PORTS[parts.scheme]
        except ValueError:
            raise _NotCalledError(_permanent(f"{parts.netloc} has no valid port")) from None
        try:
            addresses = self._policy.vet(host, port)
        except EgressRefusedError as exc:
            raise _NotCalledError(_permanent(f"egress refused: {exc}")) from None
        except EgressResolveError as exc:
            raise _NotCalledError(TargetResult("retryable", error=str(exc))) from None
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sent = {**headers, "Host": _host_header(host, port, parts.scheme)}
        if sigv4 is not None:
            sent = self._signed(sigv4, method, parts, sent, body)
        failure: urllib3.exceptions.NewConnectionError | None = None
        for address in addresses:
            pool = self._pool(parts.scheme, address, port, host)
            try:
                return pool.urlopen(
                    method,
                    target,
                    body=body if method in BODY_METHODS else None,
                    headers=sent,
                    timeout=urllib3.Timeout(total=ctx.timeout_sec),
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                    preload_content=True,
                )
            except urllib3.exceptions.NewConnectionError as exc:
                failure = exc
        assert failure is not None  # `vet` returns at least one address
        raise failure

    def _signed(
        self, sigv4: SigV4, method: str, parts: SplitResult, headers: dict[str, str], body: bytes
    ) -> dict[str, str]:
        """`headers` with a SigV4 signature of the request made with the worker's credentials."""
        frozen = self._credentials() if self._credentials is not None else None
        if frozen is None:
            raise _NotCalledError(_permanent("sigv4: this worker has no AWS credentials"))
        unsigned = {k: v for k, v in headers.items() if k.lower() not in _SIGV4_HEADERS}
        unsigned["X-Amz-Content-Sha256"] = hashlib.sha256(body).hexdigest()
        request = AWSRequest(method=method, url=parts.geturl(), data=body, headers=unsigned)
        SigV4Auth(frozen, sigv4.service, sigv4.region).add_auth(request)
        return dict(request.headers.items())

    def _pool(self, scheme: str, address: str, port: int, host: str) -> urllib3.HTTPConnectionPool:
        """The connection pool for one vetted address: its sockets can reach nowhere else."""
        key = (scheme, address, port, host.lower())
        with self._lock:
            pool = self._pools.get(key)
            if pool is not None:
                self._pools.move_to_end(key)
                return pool
            if scheme == "https":
                pool = urllib3.HTTPSConnectionPool(
                    address,
                    port,
                    maxsize=self._pool_size,
                    retries=False,
                    server_hostname=host,
                    assert_hostname=host,
                    ssl_context=self._ssl_context,
                )
            else:
                pool = urllib3.HTTPConnectionPool(
                    address, port, maxsize=self._pool_size, retries=False
                )
            self._pools[key] = pool
            if len(self._pools) > MAX_POOLS:
                _, oldest = self._pools.popitem(last=False)
                oldest.close()
            return pool

    def _headers(
        self, spec: HttpSpec, ctx: CallContext, body: bytes
    ) -> tuple[dict[str, str], set[str]]:
        """The request's headers, and the (lower-case) names of those that carry credentials."""
        for name in spec.secret_fields().values():
            problem = name_problem(name, ctx.tenant_id, self._secret_prefix)
            if problem is not None:
                raise _NotCalledError(_permanent(f"secret refused: {problem}"))
        headers, credentials = self._credential_headers(spec, ctx)
        if body:
            headers["Content-Type"] = "application/json"
        headers.update(
            {
                "User-Agent": "takt/0.1",
                "Takt-Job-Id": ctx.job_id,
                "Takt-Execution-Id": ctx.execution_id,
                "Takt-Attempt": str(ctx.attempt),
                "Takt-Scheduled-Time": format_time(ctx.scheduled_time),
                "Idempotency-Key": ctx.execution_id,
            }
        )
        headers.update(self._signature_headers(spec, ctx, body))
        return headers, credentials

    def _credential_headers(
        self, spec: HttpSpec, ctx: CallContext
    ) -> tuple[dict[str, str], set[str]]:
        """The job's own headers with the credentials it names (a headers secret, a bearer
        secret, an OIDC token; SigV4 removes what its signature replaces), and the lower-case
        names of the headers that carry credentials."""
        headers: dict[str, str] = dict(spec.headers)
        credentials: set[str] = set()
        if spec.headers_secret is not None:
            extra = _secret_headers(spec.headers_secret, self._secret(spec.headers_secret))
            headers.update(extra)
            credentials.update(k.lower() for k in extra)
        if spec.bearer_secret is not None:
            token = self._secret(spec.bearer_secret).strip()
            if not token or any(c in token for c in "\r\n\0"):
                raise _NotCalledError(
                    _permanent(f"secret {spec.bearer_secret!r} is not a bearer token")
                )
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            headers["Authorization"] = f"Bearer {token}"
            credentials.add("authorization")
        if spec.oidc_audience is not None:
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            headers["Authorization"] = f"Bearer {self._oidc_token(spec.oidc_audience, ctx)}"
            credentials.add("authorization")
        if spec.sigv4 is not None:
            # The signature is made per hop (`_signed`); a secret's Authorization would be
            # replaced by it anyway.
            headers = {k: v for k, v in headers.items() if k.lower() not in _SIGV4_HEADERS}
            credentials.update(_SIGV4_HEADERS)
        return headers, credentials

    def _signature_headers(self, spec: HttpSpec, ctx: CallContext, body: bytes) -> dict[str, str]:
        """The Standard Webhooks headers when the job or its tenant has a signing key."""
        keys, key_name = self._signing_keys(spec, ctx)
        if not keys:
            return {}
        timestamp = int(time.time())
        try:
            signatures = [sign(key, ctx.execution_id, timestamp, body) for key in keys]
        except binascii.Error:
            raise _NotCalledError(
                _permanent(f"signing secret {key_name or ''!r} is not a base64 whsec_ key")
            ) from None
        return {
            "webhook-id": ctx.execution_id,
            "webhook-timestamp": str(timestamp),
            # Standard Webhooks: several signatures, space-separated; a receiver accepts the
            # request when any one verifies (during a rotation, the new key's and the old's).
            "webhook-signature": " ".join(signatures),
        }

    def _oidc_token(self, audience: str, ctx: CallContext) -> str:
        if self._tokens is None:
            raise _NotCalledError(_permanent("oidc: this deployment has no OIDC signing key"))
        try:
            return self._tokens.token(audience, ctx.tenant_id, ctx.job_id)
        except TokenError as exc:
            outcome: Outcome = "permanent" if exc.permanent else "retryable"
            raise _NotCalledError(TargetResult(outcome, error=f"oidc: {exc}")) from None

    def _signing_keys(self, spec: HttpSpec, ctx: CallContext) -> tuple[list[str], str | None]:
        """The keys that sign this request and the job's secret's name: the job's own key, else
        its tenant's (takt.tenants.webhook_keys; two while a rotation overlaps)."""
        if spec.signing_secret is not None:
            return [self._secret(spec.signing_secret)], spec.signing_secret
        if self._tenant_keys is None or not ctx.tenant_id:
            return [], None
        try:
            return self._tenant_keys(ctx.tenant_id), None
        except SecretError as exc:
            outcome: Outcome = "permanent" if exc.permanent else "retryable"
            raise _NotCalledError(TargetResult(outcome, error=str(exc))) from None

    def _secret(self, name: str) -> str:
        if self._secrets is None:
            raise _NotCalledError(_permanent(f"secret {name!r}: this worker reads no secrets"))
        try:
            return self._secrets.get(name)
        except SecretError as exc:
            outcome: Outcome = "permanent" if exc.permanent else "retryable"
            raise _NotCalledError(TargetResult(outcome, error=str(exc))) from None


def definition_problems(
    spec: HttpSpec, tenant_id: str, policy: EgressPolicy, secret_prefix: str
) -> list[tuple[str, str]]:
    """What is wrong with an HTTP target before any call: (field, message) pairs.

    The API refuses a job whose URL names an address the policy would refuse without resolving
    anything (a literal address, `localhost`), whose URL carries credentials (stored and shown
    in plain text: a secret is the place for them), or that names a secret outside the tenant's
    prefix. A host name is not resolved here: what it resolves to when the job runs is what
    counts, and the worker checks that on every call.
    """
    problems: list[tuple[str, str]] = []
    parts = urlsplit(spec.url)
    refusal = policy.literal_refusal(parts.hostname or "")
    if refusal is not None:
        problems.append(("target.url", f"egress refused: {refusal}"))
    if parts.username is not None or parts.password is not None:
        problems.append(
            (
                "target.url",
                "credentials in the URL would be stored in plain text: name a secret in "
                "auth.bearer_secret or auth.headers_secret instead",
            )
        )
    for field, name in spec.secret_fields().items():
        problem = name_problem(name, tenant_id, secret_prefix)
        if problem is not None:
            problems.append((field, problem))
    return problems


def _secret_headers(name: str, value: str) -> dict[str, str]:
    """The headers a secret holds: a JSON object of header names to string values."""
    try:
        data = json.loads(value)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise _NotCalledError(_permanent(f"secret {name!r} is not a JSON object of header strings"))
    for header, text in data.items():
        problem = header_problem(header, text)
        if problem is not None:
            # The problem names the header, never its value.
            raise _NotCalledError(_permanent(f"secret {name!r}: {problem}"))
    return dict(data)


def _redirect(
    resp: urllib3.BaseHTTPResponse, url: str, parts: SplitResult, hops: int
) -> SplitResult | None:
    """Where a followed redirect leads, or None when `resp` is the answer; a redirect that
    must not be followed (too many, to another scheme, from https to http) is refused."""
    location = resp.headers.get("Location")
    if resp.status not in FOLLOWED_REDIRECTS or not location:
        return None
    if hops == MAX_REDIRECTS:
        raise _NotCalledError(
            _permanent(f"more than {MAX_REDIRECTS} redirects", status=resp.status)
        )
    following = urlsplit(urljoin(url, location))
    if following.scheme not in _DEFAULT_PORTS or not following.hostname:
        raise _NotCalledError(_permanent("redirect to a non-http(s) URL", status=resp.status))
    if parts.scheme == "https" and following.scheme == "http":
        raise _NotCalledError(_permanent("redirect from https to http", status=resp.status))
    return following


def _outcome(resp: urllib3.BaseHTTPResponse, started: float) -> TargetResult:
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
    if 300 <= status < 400:
        error += " (only 307 and 308 redirects are followed)"
    return TargetResult("permanent", status_code=status, error=error, duration_ms=elapsed)


def _connection_problem(exc: urllib3.exceptions.NewConnectionError) -> str:
    """What stopped a connection before anything was sent, in the attempt's words."""
    if isinstance(exc.__cause__, ConnectionRefusedError):
        return "connection refused"
    reason = exc.__cause__.strerror if isinstance(exc.__cause__, OSError) else None
    return f"connection failed: {reason or exc.__class__.__name__}"


def _permanent(error: str, *, status: int | None = None) -> TargetResult:
    return TargetResult("permanent", status_code=status, error=error)


def _origin(parts: SplitResult) -> tuple[str, str, int]:
    return (
        parts.scheme,
        (parts.hostname or "").lower(),
        parts.port or _DEFAULT_PORTS.get(parts.scheme, 0),
    )


def _host_header(host: str, port: int, scheme: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
