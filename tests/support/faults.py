"""Fault injection for the dispatch path: crashes between steps, and lost responses.

`crash_on` returns a copy of a store or sender whose one method raises `Crash` on its Nth call,
before or after doing its work, which is what a function dying at that instant leaves behind.
`LostResponses` lets a DynamoDB write reach the server and then loses its answer, through
botocore's `before-send` event, either as a connection error the SDK retries or as one it gives
up on (the function's own code then sees the error, as after a real network failure).
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import urllib3
from botocore.awsrequest import AWSPreparedRequest
from botocore.exceptions import ConnectionClosedError

T = TypeVar("T")


class Crash(Exception):  # noqa: N818 - it is the event, not an error of the code under test
    """The injected death of a function at a chosen instant."""


def crash_on(
    target: T, method: str, *, call: int = 1, when: Literal["before", "after"] = "after"
) -> T:
    """A shallow copy of `target` (sharing its clients) whose `method` crashes on call `call`.

    `before`: the call never happens; `after`: it happens and its caller never learns of it.
    Calls other than the `call`-th pass through unchanged.
    """
    real: Callable[..., Any] = getattr(target, method)
    lock = threading.Lock()
    seen = 0

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal seen
        with lock:
            seen += 1
            fire = seen == call
        if fire and when == "before":
            raise Crash(f"before {method} #{call}")
        result = real(*args, **kwargs)
        if fire:
            raise Crash(f"after {method} #{call}")
        return result

    clone = copy.copy(target)
    setattr(clone, method, wrapper)
    return clone


def interleave(target: T, method: str, action: Callable[[], None]) -> T:
    """A shallow copy of `target` that runs `action` right after every call of `method`: another
    actor's write landing between this one's read and its next write, at exactly that instant."""
    real: Callable[..., Any] = getattr(target, method)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        action()
        return result

    clone = copy.copy(target)
    setattr(clone, method, wrapper)
    return clone


class LostResponses:
    """Loses the response of the first `times` matching DynamoDB requests after they are applied.

    `retryable`: the loss looks like a closed connection, which botocore's retry mode retries, so
    the caller's second try meets its own first write. `fatal`: a plain `ConnectionError`, which
    botocore does not retry, so the error reaches the caller (the claim aborts).
    """

    def __init__(
        self,
        client: Any,
        operation: str,
        table: str,
        *,
        times: int = 1,
        mode: Literal["retryable", "fatal"] = "retryable",
    ) -> None:
        self._table = table
        self._mode = mode
        self._left = times
        self._lock = threading.Lock()
        self.lost = 0
        self._http = urllib3.PoolManager(retries=False)
        self._events = client.meta.events
        self._event = f"before-send.dynamodb.{operation}"
        self._events.register(self._event, self._before_send)

    def __enter__(self) -> LostResponses:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def remove(self) -> None:
        """Stop losing responses (the client may be shared with later tests)."""
        self._events.unregister(self._event, self._before_send)

    def _before_send(self, request: AWSPreparedRequest, **_: Any) -> None:
        body = request.body
        raw = body if isinstance(body, bytes) else str(body or "").encode()
        if json.loads(raw or b"{}").get("TableName") != self._table:
            return
        with self._lock:
            if self._left <= 0:
                return
            self._left -= 1
            self.lost += 1
        headers = {
            k: v.decode() if isinstance(v, bytes) else str(v) for k, v in request.headers.items()
        }
        # Deliver the request ourselves, so the server applies it, then drop what it answered.
        self._http.request(request.method or "POST", request.url or "", body=raw, headers=headers)
        if self._mode == "retryable":
            raise ConnectionClosedError(endpoint_url=request.url)
        raise ConnectionError("response lost after the write was applied")
