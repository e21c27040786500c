"""`takt bench`: the local runtime on a workload, metered, with its history checked.

A run starts `takt local` in this process with a meter on every AWS client, stores `stored` idle
jobs (the table size the dispatch path must not slow down with), then runs the workload: one-off
jobs due as they are created, a burst of one-off jobs all due in the same second, and interval
jobs that fire at a steady rate for a while. Every job targets a loopback HTTP receiver that
counts the calls per execution id.

When every expected occurrence has finished (or the timeout passes) it checks the history: each
occurrence (interval jobs catch up `all`, so a late claim runs them too) has exactly one
execution, it succeeded, the target saw its id once, and no execution
exists for an instant that was not due. It reports throughput (executions from the first due
instant to the last finish), the start lag the workers recorded, and what the meter counted per
execution and per job created, priced per million executions.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.models.records import ExecState, ExecutionRecord, JobRecord, job_key
from takt.observability import logger
from takt.schedule import next_after
from takt.store.items import execution_record
from takt_cli.capacity.cost import (
    PER_EXECUTION_FUNCTIONS,
    WATCH_CHECK,
    WATCH_CHECK_OPERATIONS,
    alternatives,
    cost_per_million,
    profile_from_usage,
)
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port
from takt_cli.metering import Meter, MotoImages, Usage
from takt_cli.metering.units import item_size

TENANT = "bench"
# Far from any run: stored jobs must be in the tables, never due.
IDLE_SCHEDULE = "0 0 1 1 *"
# How long the metered window stays open after the last execution finished, for the claims still
# writing their last phase (a loaded machine makes a claim outlast the runs it dispatched).
SETTLE_SEC = 120.0


@dataclass(frozen=True)
class Workload:
    """What a bench run does; every field is printed with its report."""

    stored: int = 1000
    one_off: int = 0
    burst: int = 0
    recurring: int = 0
    every_sec: int = 10
    duration_sec: int = 60
    pollers: int = 4
    due_shards: int = 4
    create_threads: int = 8
    timeout_sec: float = 600.0
    # How long the receiver takes to answer each call: the seed's jobs take 10 s on average, and
    # a run mostly waits on its target.
    job_seconds: float = 0.0
    # moto's server in a child process; writes are then sized from the requests alone.
    moto_process: bool = False

    @property
    def recurring_rate(self) -> float:
        return self.recurring / self.every_sec if self.recurring else 0.0


@dataclass
class HistoryCheck:
    """Every breach of "each due occurrence ran exactly once and succeeded", counted."""

    expected: int = 0
    executions: int = 0
    missed: int = 0
    duplicated: int = 0
    not_succeeded: int = 0
    unexpected: int = 0
    target_called_twice: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.missed
            or self.duplicated
            or self.not_succeeded
            or self.unexpected
            or self.target_called_twice
        )

    def note(self, problem: str) -> None:
        if len(self.examples) < 10:
            self.examples.append(problem)


class Receiver:
    """A loopback HTTP target that answers 200 after `delay_sec` and records, per execution id,
    how many times it was called and when first (wall clock, on arrival), with the path it was
    called on (so one receiver can tell several workloads apart: `url_for("/a")`,
    `url_for("/b")`). Each call is answered in a thread of its own, so slow answers overlap."""

    def __init__(self, delay_sec: float = 0.0) -> None:
        self.calls: Counter[str] = Counter()
        self.first: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                execution_id = self.headers.get("Takt-Execution-Id", "")
                with receiver._lock:
                    receiver.calls[execution_id] += 1
                    receiver.first.setdefault(execution_id, (self.path, time.time()))
                if delay_sec:
                    time.sleep(delay_sec)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return self.url_for("/hook")

    def url_for(self, path: str) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def distinct(self) -> int:
        with self._lock:
            return len(self.calls)

    def arrivals(self, path: str, begin: float, end: float) -> int:
        """Executions of `path` first called in [begin, end) (epoch seconds)."""
        with self._lock:
            return sum(1 for p, at in self.first.values() if p == path and begin <= at < end)

    def first_calls(self) -> dict[str, float]:
        """When each execution id first reached the receiver (epoch seconds)."""
        with self._lock:
            return {execution_id: at for execution_id, (_, at) in self.first.items()}

    def called_twice(self) -> int:
        with self._lock:
            return sum(1 for n in self.calls.values() if n > 1)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _ByteCount:
    """A stream that counts what the handlers log (the bytes CloudWatch Logs would ingest)."""

    def __init__(self) -> None:
        self.bytes = 0
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self.bytes += len(text.encode())
        return len(text)

    def flush(self) -> None:
        return


@dataclass
class _Planned:
    job: JobRecord
    occurrences: list[datetime]


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


def percentiles(values: list[float], digits: int | None = None) -> dict[str, float | None]:
    """p50, p95, p99 and max of `values` (None for no values), rounded to `digits` if given."""
    out = {}
    for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("max", 1.0)):
        value = percentile(values, q)
        out[name] = value if value is None or digits is None else round(value, digits)
    return out


class Bench:
    def __init__(self, workload: Workload, *, progress: Callable[[str], None] | None = None):
        self.workload = workload
        self._progress = progress or (lambda _: None)
        self.meter = Meter()
        self._logs = _ByteCount()
        # Set when creating the workload took past its first due time: its throughput then
        # includes creation.
        self.late_start = False

    def run(self) -> dict[str, Any]:
        w = self.workload
        os.environ["TAKT_DUE_SHARDS"] = str(w.due_shards)
        # The bench measures the scheduler, not the API's per-tenant limits: its one tenant
        # creates thousands of jobs as fast as it can.
        os.environ["TAKT_TENANT_LIMITS"] = '{"max_jobs": null, "create_per_sec": null}'
        runtime = LocalRuntime(
            RuntimeOptions(
                port=free_port(),
                pollers=w.pollers,
                log_level="INFO",
                console_dir=None,
                moto_process=w.moto_process,
            ),
            meter=self.meter,
        )
        runtime.start()
        # Handlers log at INFO, as deployed, for the log volume; the server's access log stays
        # off (it is not a handler's).
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        assert runtime.services is not None
        if not w.moto_process:
            self.meter.use_images(MotoImages(runtime.services.settings.region))
        receiver = Receiver(delay_sec=w.job_seconds)
        try:
            with self._counting_logs():
                return self._run(runtime, receiver)
        finally:
            runtime.stop()
            receiver.stop()

    @contextmanager
    def _counting_logs(self) -> Iterator[None]:
        handler: Any = logger.registered_handler
        stream = handler.stream
        handler.stream = self._logs
        try:
            yield
        finally:
            handler.stream = stream

    def _run(self, runtime: LocalRuntime, receiver: Receiver) -> dict[str, Any]:
        w = self.workload
        assert runtime.services is not None
        service = JobService(runtime.services.api)
        idle = {"schedule": IDLE_SCHEDULE, "target": receiver.url}
        start = time.monotonic()
        self._progress(f"storing {w.stored} idle jobs")
        self._create(service, [JobCreate(name=f"idle-{i}", **idle) for i in range(w.stored)])
        seed_sec = time.monotonic() - start

        before_create = self.meter.usage()
        planned: list[_Planned] = []
        bursts = w.burst + w.recurring
        lead = timedelta(seconds=3 + bursts / 100)
        if w.burst:
            due = (datetime.now(UTC) + lead).replace(microsecond=0) + timedelta(seconds=1)
            self._progress(f"creating a burst of {w.burst} due at {due:%H:%M:%S}")
            bodies = [
                JobCreate(name=f"burst-{i}", run_at=due, target=receiver.url, payload={"i": i})
                for i in range(w.burst)
            ]
            planned += [_Planned(job, [due]) for job in self._create(service, bodies)]
        if w.recurring:
            begin = (datetime.now(UTC) + lead).replace(microsecond=0) + timedelta(seconds=1)
            end = begin + timedelta(seconds=w.duration_sec) - timedelta(milliseconds=1)
            self._progress(
                f"creating {w.recurring} jobs every {w.every_sec}s from {begin:%H:%M:%S} "
                f"for {w.duration_sec}s ({w.recurring_rate:g}/s)"
            )
            bodies = [
                JobCreate(
                    name=f"every-{i}",
                    interval=f"{w.every_sec}s",
                    start_at=begin + timedelta(seconds=i % w.every_sec),
                    end_at=end,
                    # Every occurrence is measured: one the claims reach late still runs (and
                    # its lag counts) instead of being skipped by the default catch-up.
                    catchup="all",
                    target=receiver.url,
                )
                for i in range(w.recurring)
            ]
            planned += [_Planned(job, _occurrences(job)) for job in self._create(service, bodies)]
        created_usage = self.meter.usage() - before_create
        first = min((t for p in planned for t in p.occurrences), default=None)
        self.late_start = first is not None and datetime.now(UTC) >= first
        if self.late_start:
            self._progress("warning: creating the jobs took past their first due time")
        jobs_created = len(planned)
        before_run = self.meter.usage()
        logs_before = self._logs.bytes
        if w.one_off:
            self._progress(f"creating {w.one_off} one-off jobs due as they are created")
            bodies = [
                JobCreate(name=f"now-{i}", run_at=datetime.now(UTC), target=receiver.url)
                for i in range(w.one_off)
            ]
            planned += [_Planned(job, [_due(job)]) for job in self._create(service, bodies)]
        expected = sum(len(p.occurrences) for p in planned)
        self._progress(f"waiting for {expected} executions")
        deadline = time.monotonic() + w.timeout_sec
        while receiver.distinct() < expected and time.monotonic() < deadline:
            time.sleep(0.2)
        records, history_bytes = self._wait_finished(runtime, planned, deadline)
        self._wait_watched(runtime, deadline)
        self.meter.settle(SETTLE_SEC)
        run_usage = (self.meter.usage() - before_run).relabelled(
            "watchdog", WATCH_CHECK_OPERATIONS, WATCH_CHECK
        )
        logged = self._logs.bytes - logs_before
        check = _check(planned, records, receiver)
        return self._report(
            planned,
            records,
            receiver,
            check,
            run_usage,
            created_usage,
            jobs_created,
            seed_sec,
            logged,
            history_bytes,
            runtime,
        )

    def _create(self, service: JobService, bodies: list[JobCreate]) -> list[JobRecord]:
        def one(body: JobCreate) -> JobRecord:
            with self.meter.invocation("api"):
                return service.create(TENANT, body, None)[0]

        with ThreadPoolExecutor(self.workload.create_threads) as pool:
            return list(pool.map(one, bodies))

    def _wait_finished(
        self, runtime: LocalRuntime, planned: list[_Planned], deadline: float
    ) -> tuple[dict[str, list[ExecutionRecord]], float]:
        """Every planned job's executions once all are terminal (or at the deadline), and the
        average stored size of an execution item."""
        assert runtime.services is not None
        db = runtime.services.clients.dynamodb
        table = runtime.services.settings.executions_table
        while True:
            records: dict[str, list[ExecutionRecord]] = {}
            sizes: list[int] = []
            # The bench's own reads: metered apart from the executions' work.
            with self.meter.invocation("bench"):
                for plan in planned:
                    items = _all_items(db, table, job_key(TENANT, plan.job.job_id))
                    sizes += [item_size(i) for i in items]
                    records[plan.job.job_id] = [execution_record(i) for i in items]
            done = all(r.state.terminal for rs in records.values() for r in rs)
            if done or time.monotonic() >= deadline:
                return records, (sum(sizes) / len(sizes) if sizes else 0.0)
            time.sleep(0.5)

    def _wait_watched(self, runtime: LocalRuntime, deadline: float) -> None:
        """Wait until the watchdog has checked every claim's watch list (takt.store.watches):
        that check reads each execution once, after the resend wait, and is part of what an
        execution costs, so the metered window stays open for it."""
        assert runtime.services is not None
        watches = runtime.services.due.watches
        far = datetime.now(UTC) + timedelta(days=1)
        self._progress("waiting for the watchdog to check the claims' watch lists")
        while time.monotonic() < deadline:
            with self.meter.invocation("bench"):
                left = any(watches.due(shard, far) for shard in range(watches.shards))
            if not left:
                return
            time.sleep(0.5)

    def _report(
        self,
        planned: list[_Planned],
        records: dict[str, list[ExecutionRecord]],
        receiver: Receiver,
        check: HistoryCheck,
        run_usage: Usage,
        created_usage: Usage,
        jobs_created: int,
        seed_sec: float,
        logged: int,
        history_bytes: float,
        runtime: LocalRuntime,
    ) -> dict[str, Any]:
        w = self.workload
        finished = [r for rs in records.values() for r in rs if r.finished_at is not None]
        first_due = min((t for p in planned for t in p.occurrences), default=None)
        last = max((r.finished_at for r in finished if r.finished_at), default=None)
        span = (last - first_due).total_seconds() if first_due and last else 0.0
        lags = [float(r.lag_ms) for r in finished if r.lag_ms is not None]
        arrivals = receiver.first_calls()
        # The receiver's own clock against the occurrence's time: the start lag as the target
        # saw it, measured outside the code under test.
        target_lags = [
            (arrivals[r.execution_id] - r.scheduled_time.timestamp()) * 1000
            for rs in records.values()
            for r in rs
            if r.execution_id in arrivals
        ]
        executions = len(finished)
        profile = profile_from_usage(
            run_usage,
            executions,
            log_bytes=logged / max(1, executions),
            history_item_bytes=history_bytes,
        )
        one_off_profile = profile_from_usage(
            run_usage,
            executions,
            log_bytes=logged / max(1, executions),
            history_item_bytes=history_bytes,
            created=created_usage,
            jobs_created=jobs_created,
        )
        assert runtime.services is not None
        return {
            "settings": {
                "stored_jobs": w.stored,
                "one_off_due_now": w.one_off,
                "burst_same_second": w.burst,
                "recurring_jobs": w.recurring,
                "recurring_every_sec": w.every_sec,
                "recurring_rate_per_sec": w.recurring_rate,
                "recurring_duration_sec": w.duration_sec,
                "pollers_per_lane": w.pollers,
                "job_seconds": w.job_seconds,
                "due_shards": runtime.services.settings.due_shards,
                "dispatch_ahead_sec": runtime.services.settings.dispatch_ahead_sec,
                "cpus": os.cpu_count(),
                "moto": (
                    "ThreadedMotoServer in a child process (write units from requests only)"
                    if w.moto_process
                    else "ThreadedMotoServer in this process"
                ),
            },
            "created_past_due": self.late_start,
            "seed_jobs_per_sec": round(w.stored / seed_sec, 1) if w.stored and seed_sec else None,
            "executions": executions,
            "first_due_to_last_finish_sec": round(span, 2),
            "executions_per_sec": round(executions / span, 1) if span > 0 else None,
            "start_lag_ms": percentiles(lags),
            "target_start_lag_ms": percentiles(target_lags, digits=1),
            "history": {
                "expected": check.expected,
                "executions": check.executions,
                "missed": check.missed,
                "duplicated": check.duplicated,
                "not_succeeded": check.not_succeeded,
                "unexpected": check.unexpected,
                "target_called_twice": check.target_called_twice,
                "ok": check.ok,
                "examples": check.examples,
            },
            "metered_per_execution": run_usage.only(PER_EXECUTION_FUNCTIONS).to_dict(
                per=max(1, executions)
            ),
            "metered_per_job_created": created_usage.only(("api",)).to_dict(
                per=max(1, jobs_created)
            ),
            "metered_fixed_per_minute": run_usage.only(
                ("scheduler", "watchdog", "claimer-probe")
            ).to_dict(per=max(span, 1.0) / 60),
            "log_bytes_per_execution": round(logged / max(1, executions), 1),
            "history_item_bytes": round(history_bytes, 1),
            "cost_per_million_recurring": cost_per_million(profile).to_dict(),
            "cost_per_million_one_off": cost_per_million(one_off_profile).to_dict(),
            "alternatives": alternatives(),
        }


def _due(job: JobRecord) -> datetime:
    assert job.next_run_time is not None
    return job.next_run_time


def _occurrences(job: JobRecord) -> list[datetime]:
    """Every occurrence the job must run, from takt's own schedule math."""
    found: list[datetime] = []
    at = job.next_run_time
    schedule = job.parsed_schedule()
    while at is not None:
        found.append(at)
        at = next_after(schedule, at, start_at=job.start_at, end_at=job.end_at)
    return found


def _all_items(db: Any, table: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "job_key = :k",
        "ExpressionAttributeValues": {":k": {"S": key}},
        "ConsistentRead": True,
    }
    while True:
        resp = db.query(**kwargs)
        items += resp.get("Items", [])
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _check(
    planned: list[_Planned], records: dict[str, list[ExecutionRecord]], receiver: Receiver
) -> HistoryCheck:
    check = HistoryCheck()
    for plan in planned:
        found = records.get(plan.job.job_id, [])
        check.expected += len(plan.occurrences)
        check.executions += len(found)
        by_time = Counter(r.scheduled_time for r in found)
        wanted = set(plan.occurrences)
        for instant in plan.occurrences:
            if not by_time[instant]:
                check.missed += 1
                check.note(f"missed {plan.job.job_id} @ {instant.isoformat()}")
            elif by_time[instant] > 1:
                check.duplicated += by_time[instant] - 1
                check.note(f"duplicated {plan.job.job_id} @ {instant.isoformat()}")
        for record in found:
            if record.scheduled_time not in wanted:
                check.unexpected += 1
                check.note(f"unexpected {record.execution_id}")
            elif record.state != ExecState.SUCCEEDED:
                check.not_succeeded += 1
                check.note(f"{record.execution_id} is {record.state.value}")
            if receiver.calls[record.execution_id] > 1:
                check.target_called_twice += 1
                check.note(f"{record.execution_id} called {receiver.calls[record.execution_id]}x")
    return check
