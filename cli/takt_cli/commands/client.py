"""A small HTTP client for the takt API; an error answer becomes a one-line CliError."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import urllib3

from takt_cli.commands.errors import CliError

if TYPE_CHECKING:
    from takt_cli.commands.context import CliContext

_pool = urllib3.PoolManager(retries=False)

# Advice in an API error that names a body field, and the same advice in the CLI's words: the
# API tells a too-late `run_at` to send `run_late: true`, which a CLI user gives as a flag.
_CLI_ADVICE = {"send run_late: true": "add --run-late"}


def call(
    ctx: CliContext,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, Any] | None = None,
    read_timeout: float = 30,
) -> tuple[Any, dict[str, str]]:
    """Send one request; returns (parsed JSON body or None, response headers)."""
    _, parsed, response_headers = send(ctx, method, path, body, headers, query, read_timeout)
    return parsed, response_headers


def send(
    ctx: CliContext,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, Any] | None = None,
    read_timeout: float = 30,
) -> tuple[int, Any, dict[str, str]]:
    """`call`, with the status too: `takt import` tells created (201) from replayed (200)."""
    all_headers = {"Accept": "application/json", **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        all_headers["Content-Type"] = "application/json"
    fields = {k: str(v) for k, v in (query or {}).items() if v is not None}
    # Encoded here, %20 for a space, so the signed URL is byte for byte the one sent.
    url = ctx.endpoint + path + ("?" + urlencode(fields, quote_via=quote) if fields else "")
    all_headers = ctx.auth.apply(method, url, data, all_headers)
    try:
        resp = _pool.request(
            method,
            url,
            body=data,
            headers=all_headers,
            timeout=urllib3.Timeout(connect=5, read=read_timeout),
        )
    except urllib3.exceptions.HTTPError as exc:
        raise CliError(
            f"cannot reach {ctx.endpoint}: {_why_unreachable(ctx.endpoint, exc)}"
        ) from exc
    text = resp.data.decode() if resp.data else ""
    parsed: Any = None
    if text:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
    if resp.status >= 400:
        if isinstance(parsed, dict):
            detail = parsed.get("detail") or parsed.get("title") or parsed.get("message") or text
        else:
            detail = text
        for said, meant in _CLI_ADVICE.items():
            detail = detail.replace(said, meant)
        raise CliError(f"{resp.status} {detail}".strip())
    return resp.status, parsed, dict(resp.headers)


def _why_unreachable(endpoint: str, exc: urllib3.exceptions.HTTPError) -> str:
    """What went wrong, and what to check: on this machine, most often that `takt local` is not
    running; elsewhere, the endpoint."""
    reason = getattr(exc, "reason", None) or exc
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        what = "nothing answers there"
    elif isinstance(reason, urllib3.exceptions.TimeoutError):
        what = "no answer in time"
    else:
        what = reason.__class__.__name__
    host = urllib3.util.parse_url(endpoint).host or ""
    if host in {"localhost", "127.0.0.1", "::1", "[::1]"}:
        return f"{what}; is takt local running? (`make local`, or --endpoint for another API)"
    return f"{what}; check --endpoint (or TAKT_ENDPOINT)"
