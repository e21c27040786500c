"""Fault injection for the dispatch path: crashes between steps, and lost responses.

`crash_on` returns a copy of a store or sender whose one method raises `Crash` on its Nth call,
before or after doing its work, which is what a function dying at that instant leaves behind.
`Throttled` wraps a DynamoDB client whose first BatchGetItem leaves half its keys unprocessed.
`LostResponses` lets a DynamoDB write reach the server and then loses its answer, through
botocore's `before-send` event, either as a connection error the SDK retries or as one it gives
up on (the function's own code then sees the error, as after a real network failure).
"""

from __future__ import annotations

import copy
import json
import random
import threading
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import urllib3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse, HTTPHeaders
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


def precede(target: T, method: str, action: Callable[[], None], *, times: int = 1) -> T:
    """A shallow copy of `target` that runs `action` right before the first `times` calls of
    `method`: another actor's write landing after this one read and just before it writes."""
    real: Callable[..., Any] = getattr(target, method)
    left = times

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal left
        if left > 0:
            left -= 1
            action()
        return real(*args, **kwargs)

    clone = copy.copy(target)
    setattr(clone, method, wrapper)
    return clone


class LostResponses:
    """Loses the response of the first `times` matching DynamoDB requests after they are applied.

    `match`, given the request's parameters, narrows which requests of `operation` on `table`
    count (a lease, not a heartbeat: both are UpdateItem on the executions table).

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
        match: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self._table = table
        self._match = match
        self._mode = mode
        self._left = times
        self._lock = threading.Lock()
        self._lost_bodies: set[bytes] = set()
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
        params = json.loads(raw or b"{}")
        if params.get("TableName") != self._table:
            return
        if self._match is not None and not self._match(params):
            return
        with self._lock:
            # The SDK's retry of a request whose answer we lost carries the same body: let it
            # through, so each loss is one loss (the retry then meets the first try's write).
            if self._left <= 0 or raw in self._lost_bodies:
                return
            self._lost_bodies.add(raw)
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


DYNAMODB_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
# What DynamoDB answers an overloaded or contended write: the SDK retries the first two (with
# backoff, up to its attempt limit), the conflicts reach the caller.
THROTTLE_CODES = ("ProvisionedThroughputExceededException", "ThrottlingException")
CONFLICT_CODES = ("TransactionConflictException", "TransactionCanceledException")


class RandomWriteFaults:
    """Refuses a seeded random `rate` of DynamoDB write requests, as the service would.

    Registered on botocore's `before-send`: a refused request never reaches the server and its
    answer is a 400 with one of `codes` (throttling, which botocore retries, or a transaction
    conflict, which it does not). Each HTTP attempt draws again, so a retry may pass. Counts what
    it refused by code; `active` switches the faults off and on (a fault window).
    """

    def __init__(
        self,
        client: Any,
        *,
        seed: int,
        rate: float = 0.05,
        codes: tuple[str, ...] = THROTTLE_CODES + CONFLICT_CODES,
        operations: tuple[str, ...] = DYNAMODB_WRITES,
    ) -> None:
        self._random = random.Random(seed)
        self._rate = rate
        self._codes = codes
        self._lock = threading.Lock()
        self.active = True
        self.refused: dict[str, int] = {}
        self.calls = 0
        self._events = client.meta.events
        self._names = [f"before-send.dynamodb.{op}" for op in operations]
        for name in self._names:
            self._events.register(name, self._before_send)

    def __enter__(self) -> RandomWriteFaults:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def remove(self) -> None:
        for name in self._names:
            self._events.unregister(name, self._before_send)

    def _before_send(self, request: AWSPreparedRequest, **_: Any) -> Any:
        with self._lock:
            if not self.active:
                return None
            self.calls += 1
            if self._random.random() >= self._rate:
                return None
            code = self._random.choice(self._codes)
            self.refused[code] = self.refused.get(code, 0) + 1
        body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "injected"}
        if code == "TransactionCanceledException":
            body["CancellationReasons"] = [{"Code": "TransactionConflict"}]  # type: ignore[assignment]
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/x-amz-json-1.0"
        headers["x-amzn-RequestId"] = "injected"
        return AWSResponse(request.url, 400, headers, _RawBody(json.dumps(body).encode()))


class _RawBody:
    """The raw stream botocore reads a short-circuited response's body from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data

    def read(self, *_: Any) -> bytes:
        data, self._data = self._data, b""
        return data


def crash_randomly(
    target: T,
    methods: tuple[str, ...],
    rng: Any,
    *,
    rate: float,
    active: Callable[[], bool] = lambda: True,
) -> T:
    """A shallow copy of `target` whose `methods` each crash on a seeded random `rate` of calls,
    half before doing their work and half after (a function dying between two of its steps).
    `active` is the fault window; `crashes` on the copy counts what was injected, by method."""
    lock = threading.Lock()
    clone = copy.copy(target)
    crashes: dict[str, int] = {}

    def wrap(method: str) -> Callable[..., Any]:
        real: Callable[..., Any] = getattr(target, method)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with lock:
                fire = active() and rng.random() < rate
                after = rng.random() < 0.5
                if fire:
                    key = f"{method} ({'after' if after else 'before'})"
                    crashes[key] = crashes.get(key, 0) + 1
            if fire and not after:
                raise Crash(f"before {method}")
            result = real(*args, **kwargs)
            if fire:
                raise Crash(f"after {method}")
            return result

        return wrapper

    for method in methods:
        setattr(clone, method, wrap(method))
    clone.crashes = crashes  # type: ignore[attr-defined]
    return clone


class HeartbeatOutage:
    """Makes every heartbeat write on the executions table fail, while every other request
    passes: the table unreachable for one worker's lease renewals, and for nothing else.

    A heartbeat is the UpdateItem that adds to `heartbeat_seq`. `refuse`: it is answered at once
    with a 400 the SDK does not retry (AccessDenied, as when the worker's role lost its grant).
    `hang`: it never gets an answer until `remove` (a connection that cannot be made; the SDK's
    own timeouts are far longer than a test), then it is refused. `failed` counts the refused
    and hanging heartbeats. The first `let_through` heartbeats pass (one that renews the lease
    before the outage begins).
    """

    def __init__(
        self,
        client: Any,
        table: str,
        *,
        mode: Literal["refuse", "hang"] = "refuse",
        let_through: int = 0,
    ) -> None:
        self._table = table
        self._mode = mode
        self._let_through = let_through
        self._released = threading.Event()
        self._lock = threading.Lock()
        self.failed = 0
        self._events = client.meta.events
        self._events.register("before-send.dynamodb.UpdateItem", self._before_send)

    def __enter__(self) -> HeartbeatOutage:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def remove(self) -> None:
        """Let heartbeats through again; a hanging one is refused on its way out."""
        self._events.unregister("before-send.dynamodb.UpdateItem", self._before_send)
        self._released.set()

    def _before_send(self, request: AWSPreparedRequest, **_: Any) -> Any:
        body = request.body
        params = json.loads(body if isinstance(body, bytes) else str(body or "{}"))
        if params.get("TableName") != self._table or not adds_heartbeat(params):
            return None
        with self._lock:
            if self._let_through > 0:
                self._let_through -= 1
                return None
            self.failed += 1
        if self._mode == "hang":
            self._released.wait(60)
        error = {
            "__type": "com.amazon.coral.service#AccessDeniedException",
            "message": "injected: the heartbeat cannot reach the table",
        }
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/x-amz-json-1.0"
        headers["x-amzn-RequestId"] = "injected"
        return AWSResponse(request.url, 400, headers, _RawBody(json.dumps(error).encode()))


def adds_heartbeat(params: dict[str, Any]) -> bool:
    """Whether an UpdateItem adds to `heartbeat_seq` (a heartbeat), rather than naming it in its
    condition (the watchdog's reclaim is fenced on it)."""
    _, _, added = str(params.get("UpdateExpression", "")).partition("ADD ")
    names = params.get("ExpressionAttributeNames", {})
    return any(names.get(token.strip(",")) == "heartbeat_seq" for token in added.split())


def sets_started_at(params: dict[str, Any]) -> bool:
    """Whether a write sets `started_at`: a lease (no other write names it)."""
    return "started_at" in params.get("ExpressionAttributeNames", {}).values()


class SlowWrite:
    """Makes the first `times` matching DynamoDB requests slow: `elapse` runs as each is sent,
    before its answer can come back (a test moves its clock there), as when the table or the
    network takes its time. `match`, given the request's parameters, says which requests of
    `operation` on `table` count (a lease, not a heartbeat: both are UpdateItem). The request
    then goes on unchanged and `slowed` counts the ones that were slow."""

    def __init__(
        self,
        client: Any,
        operation: str,
        table: str,
        *,
        elapse: Callable[[], object],
        match: Callable[[dict[str, Any]], bool],
        times: int = 1,
    ) -> None:
        self._table = table
        self._elapse = elapse
        self._match = match
        self._left = times
        self._lock = threading.Lock()
        self.slowed = 0
        self._events = client.meta.events
        self._event = f"before-send.dynamodb.{operation}"
        self._events.register(self._event, self._before_send)

    def __enter__(self) -> SlowWrite:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._events.unregister(self._event, self._before_send)

    def _before_send(self, request: AWSPreparedRequest, **_: Any) -> None:
        body = request.body
        params = json.loads(body if isinstance(body, bytes) else str(body or "{}"))
        if params.get("TableName") != self._table or not self._match(params):
            return
        with self._lock:
            if self._left <= 0:
                return
            self._left -= 1
            self.slowed += 1
        self._elapse()


class Throttled:
    """The real client, but its first BatchGetItem leaves half its keys unprocessed, and its
    first BatchWriteItem half its items unwritten, as a throttled DynamoDB answers."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.batch_calls = 0
        self.write_calls = 0

    def batch_write_item(self, RequestItems: dict[str, Any]) -> Any:  # noqa: N803 - boto3's name
        self.write_calls += 1
        if self.write_calls > 1:
            return self._client.batch_write_item(RequestItems=RequestItems)
        ((table, requests),) = RequestItems.items()
        half = len(requests) // 2
        resp = self._client.batch_write_item(RequestItems={table: requests[:half]})
        resp["UnprocessedItems"] = {table: requests[half:]}
        return resp

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def batch_get_item(self, RequestItems: dict[str, Any]) -> Any:  # noqa: N803 - boto3's name
        self.batch_calls += 1
        if self.batch_calls > 1:
            return self._client.batch_get_item(RequestItems=RequestItems)
        ((table, request),) = RequestItems.items()
        keys = request["Keys"]
        half = len(keys) // 2
        resp = self._client.batch_get_item(RequestItems={table: {**request, "Keys": keys[:half]}})
        resp["UnprocessedKeys"] = {table: {**request, "Keys": keys[half:]}}
        return resp
