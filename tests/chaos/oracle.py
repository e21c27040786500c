"""The fault suite's oracle: verdicts that owe nothing to takt's own code, logs or counters.

Three witnesses stand outside the product and the verdict is built from them alone:

- `Witness`, a real HTTP target on 127.0.0.1: every call a job's target received, with the
  execution id, attempt and scheduled time the request carried and the moment it arrived on the
  scenario's true clock. Side effects are counted here, where they happen.
- `WireTap`, a loopback proxy in front of moto, one port per actor (each worker, the watchdog,
  the claimer): every write any of them sent to the executions table, what it asked to change and
  on which condition, whether DynamoDB accepted it, and when. Which lease an actor held, when its
  renewals said it expired, and which completion reports were sent and accepted all come from
  here, not from what the functions say about themselves.
- `expected_times`: the occurrences a schedule has, from croniter (cron) or arithmetic on the
  anchor (intervals), never `takt.schedule`.

`judge_run` turns them, and the executions table's final items (read raw), into a `ChaosReport`:
occurrences expected, run, missed; duplicate target calls; early and late calls; every accepted
completion that did not come from the lease holder or was not the only one; every lease taken
over while its holder's own clock still said it was live; every retry called before its backoff.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from croniter import croniter

from takt.clock import Clock
from tests.support.history import ChaosReport, percentile
from tests.support.receiver import Reply

TERMINAL = frozenset({"succeeded", "failed", "dead", "cancelled"})
RUNNING = "running"


# ---------------------------------------------------------------------------------------------
# Expected occurrences, by an evaluator of our own choosing


def expected_times(
    *,
    start: datetime,
    end: datetime,
    cron: str | None = None,
    zone: str = "UTC",
    interval_sec: float | None = None,
    anchor: datetime | None = None,
) -> list[datetime]:
    """Every occurrence in [start, end]: croniter for a cron expression (5 fields, or 6 with
    seconds last), `anchor + k * interval` for an interval."""
    if cron is not None:
        it = croniter(cron, (start - timedelta(microseconds=1)).astimezone(ZoneInfo(zone)))
        out: list[datetime] = []
        while True:
            at = it.get_next(datetime).astimezone(UTC)
            if at > end:
                return out
            out.append(at)
    if interval_sec is None or anchor is None:
        raise ValueError("a cron expression, or an interval and its anchor")
    period = timedelta(seconds=interval_sec)
    out = []
    at = anchor
    while at < start:
        at += period
    while at <= end:
        out.append(at)
        at += period
    return out


# ---------------------------------------------------------------------------------------------
# The receivers


@dataclass(frozen=True)
class Call:
    """One request a job's target received."""

    job_id: str
    execution_id: str
    attempt: int
    scheduled: datetime
    at: datetime
    status: int = 200
    answered: datetime | None = None


Plan = Callable[[Call, int], Reply]
"""How the target answers: given the call and how many calls its execution had before it."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A worker that stopped waiting closes its socket while we answer: not the target's fault.
        return


class Witness:
    """A loopback HTTP target that records every call on the scenario's true clock."""

    def __init__(self, clock: Clock, plan: Plan | None = None) -> None:
        self._clock = clock
        self._plan = plan or (lambda _call, _before: Reply())
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._closing = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="witness", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/effect"

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def __enter__(self) -> Witness:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _arrived(self, headers: Any) -> tuple[int, Reply]:
        call = Call(
            job_id=headers.get("Takt-Job-Id", ""),
            execution_id=headers.get("Takt-Execution-Id", ""),
            attempt=int(headers.get("Takt-Attempt", "0")),
            scheduled=datetime.fromisoformat(
                headers.get("Takt-Scheduled-Time", "").replace("Z", "+00:00")
            ),
            at=self._clock.now(),
        )
        with self._lock:
            before = sum(1 for c in self._calls if c.execution_id == call.execution_id)
            self._calls.append(call)
            index = len(self._calls) - 1
        return index, self._plan(call, before)

    def _answered(self, index: int, status: int) -> None:
        with self._lock:
            call = self._calls[index]
            self._calls[index] = Call(
                call.job_id,
                call.execution_id,
                call.attempt,
                call.scheduled,
                call.at,
                status,
                self._clock.now(),
            )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        witness = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                index, reply = witness._arrived(self.headers)
                if reply.gate is not None:
                    reply.gate.wait(30)
                if reply.delay_sec:
                    witness._closing.wait(reply.delay_sec)
                witness._answered(index, reply.status)
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


# ---------------------------------------------------------------------------------------------
# The wire


@dataclass(frozen=True)
class Write:
    """One write an actor sent to the executions table, as DynamoDB saw it."""

    actor: str
    key: str
    sets: dict[str, Any]
    removes: tuple[str, ...]
    adds: dict[str, Any]
    conditions: dict[str, tuple[Any, ...]]
    accepted: bool
    sent: datetime
    answered: datetime
    seq: int

    @property
    def state(self) -> str | None:
        value = self.sets.get("state")
        return str(value) if value is not None else None

    @property
    def grant(self) -> bool:
        return self.state == RUNNING and "lease_token" in self.sets

    @property
    def token(self) -> str | None:
        """The lease this write names: the one it grants, or the one it is conditioned on."""
        value = self.sets.get("lease_token") if self.grant else self.conditions.get("lease_token")
        if isinstance(value, tuple):
            value = value[0] if value else None
        return str(value) if value is not None else None

    @property
    def ends_lease(self) -> bool:
        return (self.state is not None and self.state != RUNNING) or "lease_token" in self.removes

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


def _plain(value: dict[str, Any]) -> Any:
    if "S" in value:
        return value["S"]
    if "N" in value:
        number = value["N"]
        return float(number) if "." in number else int(number)
    if "BOOL" in value:
        return value["BOOL"]
    return value


_ASSIGN = re.compile(r"^\s*([#\w]+)\s*=\s*(:\w+)\s*$")
_EQUALS = re.compile(r"^\(?\s*([#\w]+)\s*=\s*(:\w+)\s*\)?$")
_IN = re.compile(r"^\(?\s*([#\w]+)\s+IN\s*\(([^)]*)\)\s*\)?$")


def _split_top(text: str) -> list[str]:
    """Split a clause list on the commas outside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_update(request: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...], dict[str, Any]]:
    """(SET of plain values, REMOVE, ADD) of an UpdateItem request, names resolved."""
    names = request.get("ExpressionAttributeNames", {})
    values = request.get("ExpressionAttributeValues", {})
    sets: dict[str, Any] = {}
    removes: list[str] = []
    adds: dict[str, Any] = {}
    expression = request.get("UpdateExpression", "")
    for keyword, body in re.findall(
        r"\b(SET|REMOVE|ADD|DELETE)\b(.*?)(?=\b(?:SET|REMOVE|ADD|DELETE)\b|$)", expression
    ):
        for clause in _split_top(body):
            if keyword == "SET":
                match = _ASSIGN.match(clause)
                if match:
                    sets[names.get(match[1], match[1])] = _plain(values[match[2]])
            elif keyword == "REMOVE":
                removes.append(names.get(clause, clause))
            elif keyword == "ADD":
                name, placeholder = clause.split()
                adds[names.get(name, name)] = _plain(values[placeholder])
    return sets, tuple(removes), adds


def parse_condition(request: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """The equality and IN tests of a ConditionExpression joined by AND, names resolved."""
    names = request.get("ExpressionAttributeNames", {})
    values = request.get("ExpressionAttributeValues", {})
    out: dict[str, tuple[Any, ...]] = {}
    for raw in re.split(r"\s+AND\s+", request.get("ConditionExpression", "")):
        part = raw.strip()
        if match := _EQUALS.match(part):
            out[names.get(match[1], match[1])] = (_plain(values[match[2]]),)
        elif match := _IN.match(part):
            options = [p.strip() for p in match[2].split(",")]
            out[names.get(match[1], match[1])] = tuple(_plain(values[p]) for p in options)
    return out


class WireTap:
    """A recording proxy in front of moto: `endpoint(actor)` is the URL an actor's clients use.

    Every DynamoDB UpdateItem on `table` is recorded with its actor, the true time it was sent
    and answered, and whether it was accepted; every other request passes through untouched.
    """

    def __init__(self, upstream: str, clock: Clock, table: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._clock = clock
        self._table = table
        self._lock = threading.Lock()
        self._writes: list[Write] = []
        self._servers: dict[str, tuple[_Server, threading.Thread]] = {}
        self.offsets: dict[str, float] = {}

    def endpoint(self, actor: str, offset_sec: float = 0.0) -> str:
        """The endpoint for `actor`, whose clock runs `offset_sec` ahead of the true one."""
        self.offsets[actor] = offset_sec
        if actor not in self._servers:
            server = _Server(("127.0.0.1", 0), self._handler(actor))
            thread = threading.Thread(
                target=server.serve_forever, args=(0.02,), name=f"tap-{actor}", daemon=True
            )
            thread.start()
            self._servers[actor] = (server, thread)
        host, port = self._servers[actor][0].server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def writes(self) -> list[Write]:
        with self._lock:
            return list(self._writes)

    def close(self) -> None:
        for server, thread in self._servers.values():
            server.shutdown()
            server.server_close()
            thread.join(5)

    def _record(self, actor: str, body: bytes, status: int, sent: datetime) -> None:
        request = json.loads(body)
        if request.get("TableName") != self._table:
            return
        key = "|".join(str(_plain(v)) for _, v in sorted(request["Key"].items()))
        sets, removes, adds = parse_update(request)
        with self._lock:
            self._writes.append(
                Write(
                    actor=actor,
                    key=key,
                    sets=sets,
                    removes=removes,
                    adds=adds,
                    conditions=parse_condition(request),
                    accepted=status == 200,
                    sent=sent,
                    answered=self._clock.now(),
                    seq=len(self._writes),
                )
            )

    def _handler(self, actor: str) -> type[BaseHTTPRequestHandler]:
        tap = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                sent = tap._clock.now()
                upstream = http.client.HTTPConnection(*tap._upstream, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    resp = upstream.getresponse()
                    answer = resp.read()
                    status = resp.status
                    reply_headers = [
                        (k, v)
                        for k, v in resp.getheaders()
                        if k.lower() not in ("transfer-encoding", "connection", "content-length")
                    ]
                finally:
                    upstream.close()
                target = self.headers.get("X-Amz-Target", "")
                if target.endswith(".UpdateItem"):
                    tap._record(actor, body, status, sent)
                self.send_response(status)
                for name, value in reply_headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_PUT = do_DELETE = do_POST  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


# ---------------------------------------------------------------------------------------------
# The verdict


@dataclass
class Expectation:
    """What one job must have done: the occurrences that had to reach its target, and those
    that may or may not have (claimed ahead at the end of a run, or decided by a racing edit)."""

    job_id: str
    must: Sequence[datetime]
    may: Sequence[datetime] = ()
    must_not: Sequence[datetime] = ()
    retry_fixed_sec: float | None = None


@dataclass
class Verdict:
    """What the oracle found, besides the `ChaosReport` figures."""

    live_takeovers: list[str] = field(default_factory=list)
    stale_completions: list[str] = field(default_factory=list)
    completion_problems: list[str] = field(default_factory=list)
    early_calls: list[str] = field(default_factory=list)
    early_retries: list[str] = field(default_factory=list)
    unexpected_calls: list[str] = field(default_factory=list)
    reports_sent: int = 0
    reports_accepted: int = 0


def table_items(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    """Every item of `table`, read raw (no takt model in between)."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        resp = dynamodb.scan(**kwargs)
        items.extend(resp.get("Items", []))
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _item_key(item: dict[str, Any]) -> str:
    return "|".join(str(_plain(item[k])) for k in sorted(("job_key", "sk")))


def judge_leases(
    writes: Iterable[Write], offsets: dict[str, float], verdict: Verdict
) -> dict[str, list[Write]]:
    """Replay every execution's accepted writes in order: who held its lease, until when on the
    holder's own clock, and which completions were accepted from whom. Returns the accepted
    terminal writes per execution key."""
    by_key: dict[str, list[Write]] = defaultdict(list)
    for write in writes:
        if write.terminal:
            verdict.reports_sent += 1
        by_key[write.key].append(write)
    accepted_terminal: dict[str, list[Write]] = defaultdict(list)
    for key, history in by_key.items():
        granted: dict[str, str] = {}  # actor -> the last lease it was granted
        holder: tuple[str, str, float] | None = None  # (actor, token, true expiry in seconds)
        for write in sorted(history, key=lambda w: (w.answered, w.seq)):
            if not write.accepted:
                continue
            now = write.answered.timestamp()
            live = holder is not None and now < holder[2]
            if write.grant:
                if live and holder is not None:
                    verdict.live_takeovers.append(
                        f"{key}: {write.actor} leased it while {holder[0]}'s lease was live"
                    )
                token = write.token or ""
                granted[write.actor] = token
                holder = (write.actor, token, _true_expiry(write, offsets))
                continue
            if holder is not None and write.token == holder[1] and "lease_expires_at" in write.sets:
                holder = (holder[0], holder[1], _true_expiry(write, offsets))
            if write.terminal:
                verdict.reports_accepted += 1
                accepted_terminal[key].append(write)
                source = write.token or granted.get(write.actor)
                if write.actor.startswith("worker") and (holder is None or source != holder[1]):
                    verdict.stale_completions.append(
                        f"{key}: {write.state} from {write.actor} accepted, its lease "
                        f"was not the holder's ({holder[0] if holder else 'none'})"
                    )
            if write.ends_lease and holder is not None:
                if live and write.actor != holder[0]:
                    verdict.live_takeovers.append(
                        f"{key}: {write.actor} ended {holder[0]}'s live lease ({write.state})"
                    )
                holder = None
    return accepted_terminal


def stale_reports_refused(writes: Iterable[Write]) -> int:
    """The reports of a lease holder that DynamoDB refused because the lease had moved on, as
    the wire saw them: writes fenced on a lease token (and not on the heartbeat sequence, which
    only the watchdog's reclaim names) that would have moved the execution to another state.
    A heartbeat moves no state; a reclaim that loses to a completion is the watchdog's, not a
    report."""
    return sum(
        1
        for w in writes
        if not w.accepted
        and "lease_token" in w.conditions
        and "heartbeat_seq" not in w.conditions
        and w.state is not None
    )


def _true_expiry(write: Write, offsets: dict[str, float]) -> float:
    """When a lease written by `write` expires on the true clock: the value is on the writer's
    clock (a worker's own), so a worker running behind holds its lease longer in true time."""
    expires_ms = write.sets.get("lease_expires_at")
    if not isinstance(expires_ms, int | float):
        return 0.0
    return float(expires_ms) / 1000 - offsets.get(write.actor, 0.0)


def judge_run(
    report: ChaosReport,
    expectations: Sequence[Expectation],
    calls: Sequence[Call],
    writes: Sequence[Write],
    items: Sequence[dict[str, Any]],
    *,
    offsets: dict[str, float],
    margin_sec: float,
    fault_end: datetime | None = None,
) -> Verdict:
    """Fill `report` from the witnesses and the table's final items; the oracle's own findings
    come back as a `Verdict`, and every breach is also one of `report.other_problems`."""
    verdict = Verdict()
    accepted = judge_leases(writes, offsets, verdict)
    by_occurrence: dict[tuple[str, datetime], list[Call]] = defaultdict(list)
    for call in calls:
        by_occurrence[(call.job_id, call.scheduled)].append(call)
    lateness: list[float] = []
    recovered: list[float] = []
    histogram: Counter[int] = Counter()
    duplicate_calls = 0
    known: set[tuple[str, datetime]] = set()
    for expect in expectations:
        for at in (*expect.must, *expect.may):
            known.add((expect.job_id, at))
        for at in expect.must_not:
            if by_occurrence.get((expect.job_id, at)):
                report.other_problems.append(
                    f"called though decided not to run: {expect.job_id} @ {at.isoformat()}"
                )
        for at in expect.must:
            report.occurrences += 1
            got = by_occurrence.get((expect.job_id, at), [])
            histogram[len(got)] += 1
            if not got:
                report.missed.append(f"{expect.job_id} @ {at.isoformat()}")
                continue
            ids = {c.execution_id for c in got}
            if len(ids) > 1:
                report.duplicate_executions.append(
                    f"{expect.job_id} @ {at.isoformat()}: {sorted(ids)}"
                )
            first = min(c.at for c in got)
            lateness.append((first - at).total_seconds())
            if fault_end is not None and at <= fault_end:
                recovered.append((first - fault_end).total_seconds())
        for at in (*expect.must, *expect.may):
            got = by_occurrence.get((expect.job_id, at), [])
            # A retry is a new attempt; the same attempt called again is a duplicate.
            per_attempt = Counter((c.execution_id, c.attempt) for c in got)
            duplicate_calls += sum(n - 1 for n in per_attempt.values())
            for call in got:
                if (call.at - at).total_seconds() < -margin_sec:
                    verdict.early_calls.append(
                        f"{call.execution_id} called {(at - call.at).total_seconds():.2f} s early"
                    )
            if expect.retry_fixed_sec is not None:
                _judge_retries(got, expect.retry_fixed_sec, margin_sec, verdict)
    for (job_id, at), got in by_occurrence.items():
        if (job_id, at) not in known:
            verdict.unexpected_calls.append(f"{job_id} @ {at.isoformat()} x{len(got)}")
    _judge_store(items, accepted, {c.execution_id for c in calls}, report, verdict)
    report.executions = len(items)
    report.effects_per_occurrence = {str(k): v for k, v in sorted(histogram.items())}
    report.lateness_sec = {
        "min": min(lateness, default=0.0),
        "p50": percentile(lateness, 0.5),
        "p99": percentile(lateness, 0.99),
        "max": max(lateness, default=0.0),
    }
    if fault_end is not None:
        report.recovery_sec = max(0.0, *recovered) if recovered else 0.0
    report.extra.update(
        {
            "oracle": {
                "expected": report.occurrences,
                "run": report.occurrences - len(report.missed),
                "missed": len(report.missed),
                "duplicate_target_calls": duplicate_calls,
                "late_p99_sec": report.lateness_sec["p99"],
                "target_calls": len(calls),
                "completion_reports_sent": verdict.reports_sent,
                "completion_reports_accepted": verdict.reports_accepted,
                "live_takeovers": len(verdict.live_takeovers),
            }
        }
    )
    report.other_problems.extend(
        [
            *(f"stale completion accepted: {s}" for s in verdict.stale_completions),
            *(f"completion: {c}" for c in verdict.completion_problems),
            *(f"early call: {e}" for e in verdict.early_calls),
            *(f"retry before its backoff: {e}" for e in verdict.early_retries),
            *(f"unexpected call: {u}" for u in verdict.unexpected_calls),
        ]
    )
    report.duplicate_completions = [
        c for c in verdict.completion_problems if c.startswith("more than one")
    ]
    return verdict


def _judge_retries(
    calls: Sequence[Call], fixed_sec: float, margin_sec: float, verdict: Verdict
) -> None:
    """A fixed-backoff retry may not reach the target before the failed attempt's answer plus
    the job's interval (less the clock margin)."""
    ordered = sorted(calls, key=lambda c: c.at)
    for earlier, later in pairwise(ordered):
        if later.attempt <= earlier.attempt or earlier.answered is None or earlier.status < 500:
            continue
        gap = (later.at - earlier.answered).total_seconds()
        if gap < fixed_sec - margin_sec:
            verdict.early_retries.append(
                f"{later.execution_id} attempt {later.attempt} {gap:.2f} s after attempt "
                f"{earlier.attempt} failed (backoff {fixed_sec} s)"
            )


def _judge_store(
    items: Sequence[dict[str, Any]],
    accepted: dict[str, list[Write]],
    called: set[str],
    report: ChaosReport,
    verdict: Verdict,
) -> None:
    """Each execution's final item: one accepted outcome, the one the item holds, with one
    terminal entry in its attempt log; an execution whose target was called has ended."""
    for item in items:
        key = _item_key(item)
        execution_id = str(_plain(item.get("execution_id", {"S": key})))
        state = str(_plain(item.get("state", {"S": ""})))
        outcomes = [
            str(_plain(entry["M"]["outcome"]))
            for entry in item.get("attempts", {}).get("L", [])
            if "outcome" in entry.get("M", {})
        ]
        terminal_entries = [o for o in outcomes if o in TERMINAL]
        reports = accepted.get(key, [])
        if state not in TERMINAL:
            if execution_id in called:
                report.unfinished.append(f"{execution_id} is {state}")
            continue
        if len(reports) > 1 or len(terminal_entries) > 1:
            verdict.completion_problems.append(
                f"more than one accepted outcome for {execution_id}: "
                f"{[w.state for w in reports]} / {terminal_entries}"
            )
        elif len(reports) == 1 and reports[0].state != state:
            verdict.completion_problems.append(
                f"{execution_id} holds {state}, the accepted report said {reports[0].state}"
            )
        elif not reports and state != "skipped":
            verdict.completion_problems.append(f"{execution_id} is {state} with no report seen")
