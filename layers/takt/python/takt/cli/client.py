"""A small HTTP client for the takt API; an error answer becomes a one-line CliError."""

from __future__ import annotations

import json
from typing import Any

import urllib3

from takt.cli.context import CliError

_pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=30))


def call(
    endpoint: str,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, Any] | None = None,
) -> tuple[Any, dict[str, str]]:
    """Send one request; returns (parsed JSON body or None, response headers)."""
    all_headers = {"Accept": "application/json", **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        all_headers["Content-Type"] = "application/json"
    fields = {k: str(v) for k, v in (query or {}).items() if v is not None}
    url = endpoint + path
    try:
        resp = _pool.request(method, url, body=data, headers=all_headers, fields=fields or None)
    except urllib3.exceptions.HTTPError as exc:
        raise CliError(f"cannot reach {endpoint}: {exc.__class__.__name__}") from exc
    text = resp.data.decode() if resp.data else ""
    parsed: Any = None
    if text:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
    if resp.status >= 400:
        if isinstance(parsed, dict):
            detail = parsed.get("detail") or parsed.get("title") or text
        else:
            detail = text
        raise CliError(f"{resp.status} {detail}".strip())
    return parsed, dict(resp.headers)
