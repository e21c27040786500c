"""The meter: counts what a run's real boto3 calls would be billed, from botocore's events.

`Meter.attach(client)` registers handlers on a client's event system, so every request the
library makes is seen as it is made, with nothing in the library changed: the API call and its
answer (`after-call`), each HTTP attempt including retries (`before-send`, since AWS bills
attempts), and for DynamoDB writes the item's image before the request (`before-parameter-build`)
and after it, from an `ItemImages` source. Handler time is measured by `invocation()`, which the
local runtime wraps around each handler call; the calls made inside are attributed to that
function (per context, so the runtime's many concurrent invocations stay apart, and the helper
threads an invocation hands work to in a copy of its context are still counted under it).

Everything is summed under one lock; `usage()` returns an immutable snapshot, and two snapshots
subtract, so a run's phases (creating jobs, running them) are reported apart.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from takt.dispatch.claimer import ClaimResult
from takt.dispatch.ticker import ClaimCall
from takt_cli.metering.images import ItemImages
from takt_cli.metering.units import (
    index_write_units,
    item_size,
    read_units,
    sqs_billed_requests,
    write_units,
)

OUTSIDE = "outside"
"""The function name for calls made outside any invocation (the local runtime's SQS pollers, as
Lambda's event source mapping makes them in the cloud, and a bench's own setup)."""

_SINGLE_WRITES = ("PutItem", "UpdateItem", "DeleteItem")
_CONTEXT_KEY = "takt_meter"


@dataclass
class Invocation:
    """The handle of one running invocation: the function its time and calls are recorded
    under, and what it metered so far (kept apart until it ends, so a caller may still rename
    it)."""

    function: str
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    write_units: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    read_half_units: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    sqs_requests: Counter[str] = field(default_factory=Counter)
    # CPU spent for this invocation by threads other than its own (a claim's write threads);
    # the invocation's caller adds it, since only it knows what its helpers did.
    helper_cpu_sec: float = 0.0


@dataclass(frozen=True)
class Invocations:
    """How often a function was invoked and the time it took, summed."""

    count: int = 0
    wall_sec: float = 0.0
    cpu_sec: float = 0.0

    def __add__(self, other: Invocations) -> Invocations:
        return Invocations(
            self.count + other.count,
            self.wall_sec + other.wall_sec,
            self.cpu_sec + other.cpu_sec,
        )

    def __sub__(self, other: Invocations) -> Invocations:
        return Invocations(
            self.count - other.count,
            self.wall_sec - other.wall_sec,
            self.cpu_sec - other.cpu_sec,
        )


@dataclass(frozen=True)
class Usage:
    """A snapshot of everything metered.

    Keys: `calls[(function, service, operation)]`; `attempts[(service, operation)]` (HTTP
    requests, retries included); `errors[(service, operation, code)]`;
    `write_units`/`read_half_units[(function, table, index, operation)]` with index "" for the
    table itself (reads in halves, an eventually consistent read's unit);
    `sqs_requests[(function, operation)]` as billed (64 KB chunks; an empty receive is the
    operation "ReceiveMessage (empty)"); `invocations[function]`.
    """

    calls: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    attempts: Counter[tuple[str, str]] = field(default_factory=Counter)
    errors: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    write_units: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    read_half_units: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    sqs_requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    invocations: Mapping[str, Invocations] = field(default_factory=dict)

    def __sub__(self, earlier: Usage) -> Usage:
        return Usage(
            calls=self.calls - earlier.calls,
            attempts=self.attempts - earlier.attempts,
            errors=self.errors - earlier.errors,
            write_units=self.write_units - earlier.write_units,
            read_half_units=self.read_half_units - earlier.read_half_units,
            sqs_requests=self.sqs_requests - earlier.sqs_requests,
            invocations={
                name: totals - earlier.invocations.get(name, Invocations())
                for name, totals in self.invocations.items()
                if totals.count > earlier.invocations.get(name, Invocations()).count
            },
        )

    def only(self, functions: tuple[str, ...]) -> Usage:
        """What the named functions did (HTTP attempts and errors are not per function: kept)."""
        return self._rekeyed(
            lambda key: key if key[0] in functions else None,
            {k: v for k, v in self.invocations.items() if k in functions},
        )

    def relabelled(self, function: str, operations: frozenset[str], as_function: str) -> Usage:
        """This usage with `function`'s calls of `operations` counted as `as_function`'s: work
        one function does for another's reasons (the watchdog checking the claims' watch lists
        does per-execution work in a function otherwise fixed). Its invocations stay."""
        return self._rekeyed(
            lambda key: (
                (as_function, *key[1:]) if key[0] == function and key[-1] in operations else key
            ),
            self.invocations,
        )

    def _rekeyed(
        self,
        rekey: Callable[[tuple[str, ...]], tuple[str, ...] | None],
        invocations: Mapping[str, Invocations],
    ) -> Usage:
        """This usage with each per-function count under `rekey(key)`, or left out where that is
        None (HTTP attempts and errors are not per function: kept)."""

        def rekeyed(counter: Counter[Any]) -> Counter[Any]:
            out: Counter[Any] = Counter()
            for key, n in counter.items():
                new = rekey(key)
                if new is not None:
                    out[new] += n
            return out

        return Usage(
            calls=rekeyed(self.calls),
            attempts=self.attempts,
            errors=self.errors,
            write_units=rekeyed(self.write_units),
            read_half_units=rekeyed(self.read_half_units),
            sqs_requests=rekeyed(self.sqs_requests),
            invocations=invocations,
        )

    def total_calls(self, service: str | None = None) -> int:
        return sum(n for (_, svc, _), n in self.calls.items() if service in (None, svc))

    def total_write_units(self) -> float:
        return float(sum(self.write_units.values()))

    def total_read_units(self) -> float:
        return sum(self.read_half_units.values()) / 2

    def total_sqs_requests(self, *, include_empty_receives: bool = True) -> int:
        return sum(
            n
            for (_, op), n in self.sqs_requests.items()
            if include_empty_receives or op != EMPTY_RECEIVE
        )

    def to_dict(self, per: float = 1.0) -> dict[str, Any]:
        """A JSON-ready view, every count divided by `per` (executions, or jobs created)."""

        def scaled(value: float) -> float:
            return round(value / per, 4)

        return {
            "aws_calls": {
                f"{svc}.{op}": scaled(n)
                for (svc, op), n in sorted(_merge(self.calls, (1, 2)).items())
            },
            "aws_calls_by_function": {
                f"{fn}: {svc}.{op}": scaled(n) for (fn, svc, op), n in sorted(self.calls.items())
            },
            "http_attempts": scaled(sum(self.attempts.values())),
            "errors": {f"{s}.{o} {c}": scaled(n) for (s, o, c), n in sorted(self.errors.items())},
            "dynamodb_write_units": {
                _unit_key(key): scaled(n) for key, n in sorted(self.write_units.items())
            },
            "dynamodb_read_units": {
                _unit_key(key): scaled(n / 2) for key, n in sorted(self.read_half_units.items())
            },
            "dynamodb_write_units_total": scaled(self.total_write_units()),
            "dynamodb_read_units_total": scaled(self.total_read_units()),
            "sqs_billed_requests": {
                f"{fn}: {op}": scaled(n) for (fn, op), n in sorted(self.sqs_requests.items())
            },
            "invocations": {
                name: {
                    "count": scaled(inv.count),
                    "wall_ms_per_invocation": round(inv.wall_sec * 1000 / inv.count, 2),
                    "cpu_ms_per_invocation": round(inv.cpu_sec * 1000 / inv.count, 2),
                }
                for name, inv in sorted(self.invocations.items())
                if inv.count
            },
        }


EMPTY_RECEIVE = "ReceiveMessage (empty)"


def _merge(
    counter: Counter[tuple[str, str, str]], keep: tuple[int, int]
) -> Counter[tuple[str, str]]:
    merged: Counter[tuple[str, str]] = Counter()
    for key, n in counter.items():
        merged[(key[keep[0]], key[keep[1]])] += n
    return merged


def _unit_key(key: tuple[str, str, str, str]) -> str:
    function, table, index, operation = key
    where = f"{table}/{index}" if index else table
    return f"{function}: {where} {operation}"


class Meter:
    """Thread-safe counters fed by botocore events and by `invocation()`."""

    def __init__(self, images: ItemImages | None = None) -> None:
        self._images = images
        self._lock = threading.Lock()
        self._stack: ContextVar[tuple[Invocation, ...]] = ContextVar("takt_meter", default=())
        self._calls: Counter[tuple[str, str, str]] = Counter()
        self._attempts: Counter[tuple[str, str]] = Counter()
        self._errors: Counter[tuple[str, str, str]] = Counter()
        self._write: Counter[tuple[str, str, str, str]] = Counter()
        self._read_halves: Counter[tuple[str, str, str, str]] = Counter()
        self._sqs: Counter[tuple[str, str]] = Counter()
        self._invocations: dict[str, Invocations] = {}
        self._open: set[int] = set()

    # Wiring

    def use_images(self, images: ItemImages) -> None:
        """Size writes by their before and after images from now on (the local runtime's moto
        exists only once the runtime started, after its clients were built)."""
        self._images = images

    def attach(self, client: Any) -> None:
        """Meter every request `client` makes from now on."""
        events = client.meta.events
        events.register("before-parameter-build", self._before)
        events.register("before-send", self._attempt)
        events.register("after-call", self._after)
        events.register("after-call-error", self._after_error)

    def metered_claim(self, claim: ClaimCall) -> ClaimCall:
        """A claim timed as a `claimer` invocation when it found something due, and as a
        `claimer-probe` when not: in the cloud the ticker's one-item query stands in for an
        empty claim, so only the claims that found work are claimer invocations. The claim's
        write threads count under it too (they run in a copy of its context), and so does
        their CPU."""

        def run(minute: datetime, shard: int, now: datetime, partitions: int | None) -> ClaimResult:
            with self.invocation("claimer") as invocation:
                result = claim(minute, shard, now, partitions)
                invocation.helper_cpu_sec = result.helper_cpu_sec
                if not result.due:
                    invocation.function = "claimer-probe"
                return result

        return run

    @contextmanager
    def invocation(self, function: str) -> Iterator[Invocation]:
        """Time one handler invocation (wall and this thread's CPU) and attribute its calls.

        The time is recorded under the handle's `function` as it is when the block ends, so a
        caller may reclassify an invocation by what it turned out to do.
        """
        handle = Invocation(function)
        with self._lock:
            self._open.add(id(handle))
        token = self._stack.set((*self._stack.get(), handle))
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            yield handle
        finally:
            spent = Invocations(
                1,
                time.perf_counter() - wall,
                time.thread_time() - cpu + handle.helper_cpu_sec,
            )
            self._stack.reset(token)
            name = handle.function
            with self._lock:
                self._open.discard(id(handle))
                self._invocations[name] = self._invocations.get(name, Invocations()) + spent
                for (service, operation), n in handle.calls.items():
                    self._calls[(name, service, operation)] += n
                for (table, index, operation), n in handle.write_units.items():
                    self._write[(name, table, index, operation)] += n
                for (table, index, operation), n in handle.read_half_units.items():
                    self._read_halves[(name, table, index, operation)] += n
                for operation, n in handle.sqs_requests.items():
                    self._sqs[(name, operation)] += n

    def settle(self, timeout_sec: float) -> bool:
        """Wait until every invocation open now has ended (its calls are counted only then);
        False if one is still open after `timeout_sec`. A run's last executions can finish
        while the claim that dispatched them still writes its last phase."""
        with self._lock:
            waiting = set(self._open)
        deadline = time.monotonic() + timeout_sec
        idle = threading.Event()  # never set: its timed wait is the polling interval
        while True:
            with self._lock:
                if waiting.isdisjoint(self._open):
                    return True
            if time.monotonic() >= deadline:
                return False
            idle.wait(0.05)

    def usage(self) -> Usage:
        with self._lock:
            return Usage(
                calls=Counter(self._calls),
                attempts=Counter(self._attempts),
                errors=Counter(self._errors),
                write_units=Counter(self._write),
                read_half_units=Counter(self._read_halves),
                sqs_requests=Counter(self._sqs),
                invocations=dict(self._invocations),
            )

    def _current(self) -> Invocation | None:
        stack = self._stack.get()
        return stack[-1] if stack else None

    # botocore events

    def _before(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        record: dict[str, Any] = {"invocation": self._current(), "params": params}
        if model.service_model.service_name == "dynamodb" and model.name in _SINGLE_WRITES:
            table, key = _write_target(params, self._images)
            if table and key and self._images is not None:
                record["old"] = self._images.image(table, key)
                record["key"] = key
        context[_CONTEXT_KEY] = record

    def _attempt(self, event_name: str, **_: Any) -> None:
        service, operation = event_name.split(".", 2)[1:]
        with self._lock:
            self._attempts[(service, operation)] += 1

    def _after_error(
        self, model: Any, context: dict[str, Any], exception: Exception, **_: Any
    ) -> None:
        record = context.get(_CONTEXT_KEY, {})
        service = model.service_model.service_name
        self._add(record.get("invocation"), service, model.name, [], [], [])
        with self._lock:
            self._errors[(service, model.name, type(exception).__name__)] += 1

    def _after(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        record = context.get(_CONTEXT_KEY, {})
        params: dict[str, Any] = record.get("params", {})
        service = model.service_model.service_name
        code = parsed.get("Error", {}).get("Code")
        writes: list[tuple[str, str, float]] = []
        reads: list[tuple[str, str, float]] = []
        billed: list[tuple[str, int]] = []
        if service == "dynamodb":
            writes, reads = self._dynamodb_units(model.name, params, parsed, record, code)
        elif service == "sqs":
            billed = [_sqs_billed(model.name, params, parsed)]
        self._add(record.get("invocation"), service, model.name, writes, reads, billed)
        if code:
            with self._lock:
                self._errors[(service, model.name, code)] += 1

    def _add(
        self,
        invocation: Invocation | None,
        service: str,
        operation: str,
        writes: list[tuple[str, str, float]],
        reads: list[tuple[str, str, float]],
        billed: list[tuple[str, int]],
    ) -> None:
        """Count one call: into its invocation (under the lock: its helper threads count into it
        too), or, made outside any, straight into the totals."""
        if invocation is not None:
            with self._lock:
                invocation.calls[(service, operation)] += 1
                for table, index, units in writes:
                    invocation.write_units[(table, index, operation)] += round(units)
                for table, index, units in reads:
                    invocation.read_half_units[(table, index, operation)] += round(units * 2)
                for name, n in billed:
                    invocation.sqs_requests[name] += n
            return
        with self._lock:
            self._calls[(OUTSIDE, service, operation)] += 1
            for table, index, units in writes:
                self._write[(OUTSIDE, table, index, operation)] += round(units)
            for table, index, units in reads:
                self._read_halves[(OUTSIDE, table, index, operation)] += round(units * 2)
            for name, n in billed:
                self._sqs[(OUTSIDE, name)] += n

    def _dynamodb_units(
        self,
        operation: str,
        params: dict[str, Any],
        parsed: dict[str, Any],
        record: dict[str, Any],
        code: str | None,
    ) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, float]]]:
        """(writes, reads) as (table, index, units); nothing for a throttled or invalid call."""
        failed_condition = code in (
            "ConditionalCheckFailedException",
            "TransactionCanceledException",
        )
        if code and not failed_condition:
            return [], []
        if operation in _SINGLE_WRITES:
            return self._single_write(operation, params, parsed, record, failed_condition), []
        if operation == "TransactWriteItems":
            units = [
                (_transact_table(entry), "", 2.0 * write_units(item_size(_transact_item(entry))))
                for entry in params.get("TransactItems", [])
            ]
            return units, []
        if operation == "BatchWriteItem":
            return [
                (table, "", float(write_units(item_size(req.get("PutRequest", {}).get("Item")))))
                for table, requests in params.get("RequestItems", {}).items()
                for req in requests
            ], []
        return [], _reads(operation, params, parsed)

    def _single_write(
        self,
        operation: str,
        params: dict[str, Any],
        parsed: dict[str, Any],
        record: dict[str, Any],
        failed_condition: bool,
    ) -> list[tuple[str, str, float]]:
        table = str(params.get("TableName", ""))
        old = record.get("old")
        if failed_condition:
            return [(table, "", float(write_units(item_size(old))))]
        key = record.get("key")
        if self._images is not None and key is not None:
            new = self._images.image(table, key)
        elif operation == "PutItem":
            new = params.get("Item")
        else:
            new = parsed.get("Attributes") if params.get("ReturnValues") == "ALL_NEW" else None
        units = [(table, "", float(write_units(max(item_size(old), item_size(new)))))]
        shape = self._images.shape(table) if self._images is not None else None
        if shape is not None and key is not None:
            units += [
                (table, index, float(n)) for index, n in index_write_units(shape, old, new).items()
            ]
        return units


def _write_target(
    params: dict[str, Any], images: ItemImages | None
) -> tuple[str, dict[str, Any] | None]:
    table = str(params.get("TableName", ""))
    if "Key" in params:
        return table, dict(params["Key"])
    shape = images.shape(table) if images is not None else None
    if shape is None or "Item" not in params:
        return table, None
    return table, shape.key_of(params["Item"])


def _transact_table(entry: dict[str, Any]) -> str:
    ((_, body),) = entry.items()
    return str(body.get("TableName", ""))


def _transact_item(entry: dict[str, Any]) -> dict[str, Any] | None:
    ((_, body),) = entry.items()
    item = body.get("Item") or body.get("Key")
    return dict(item) if item else None


def _reads(
    operation: str, params: dict[str, Any], parsed: dict[str, Any]
) -> list[tuple[str, str, float]]:
    table = str(params.get("TableName", ""))
    consistent = bool(params.get("ConsistentRead", False))
    if operation == "GetItem":
        return [(table, "", read_units(item_size(parsed.get("Item")), consistent=consistent))]
    if operation in ("Query", "Scan"):
        items = parsed.get("Items", [])
        sizes = [item_size(i) for i in items]
        scanned = int(parsed.get("ScannedCount", len(items)))
        # A filtered or counted read returns less than it read; what it discarded is sized like
        # what it returned.
        average = sum(sizes) / len(sizes) if sizes else 0.0
        size = sum(sizes) + max(0, scanned - len(sizes)) * average
        index = str(params.get("IndexName", ""))
        return [(table, index, read_units(int(size), consistent=consistent and not index))]
    if operation == "BatchGetItem":
        reads: list[tuple[str, str, float]] = []
        responses = parsed.get("Responses", {})
        for name, request in params.get("RequestItems", {}).items():
            strong = bool(request.get("ConsistentRead", False))
            found = responses.get(name, [])
            reads += [(name, "", read_units(item_size(item), consistent=strong)) for item in found]
            unprocessed = len(parsed.get("UnprocessedKeys", {}).get(name, {}).get("Keys", []))
            missing = len(request.get("Keys", [])) - len(found) - unprocessed
            reads += [(name, "", read_units(0, consistent=strong))] * max(0, missing)
        return reads
    if operation == "TransactGetItems":
        return [
            (
                str(entry["Get"]["TableName"]),
                "",
                2 * read_units(item_size(resp.get("Item")), consistent=True),
            )
            for entry, resp in zip(
                params.get("TransactItems", []), parsed.get("Responses", []), strict=False
            )
        ]
    return []


def _sqs_billed(operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> tuple[str, int]:
    if operation == "SendMessage":
        return operation, sqs_billed_requests(len(str(params.get("MessageBody", "")).encode()))
    if operation == "SendMessageBatch":
        size = sum(len(str(e.get("MessageBody", "")).encode()) for e in params.get("Entries", []))
        return operation, sqs_billed_requests(size)
    if operation == "ReceiveMessage":
        messages = parsed.get("Messages", [])
        if not messages:
            return EMPTY_RECEIVE, 1
        return operation, sqs_billed_requests(
            sum(len(m.get("Body", "").encode()) for m in messages)
        )
    return operation, 1
