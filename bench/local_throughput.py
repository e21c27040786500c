"""End-to-end throughput of `takt local` on moto: how many executions per second the real
handlers complete, with N jobs stored, for a burst of one-off jobs all due in the same second.

    .venv/bin/python bench/local_throughput.py --stored 10000 --due 1000

It prints its settings, the throughput from the due instant to the last completion, the start
lag percentiles (execution start minus scheduled time, as recorded by the worker), and checks the
history: every due job has exactly one execution, succeeded, and the target saw each execution id
exactly once.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path[:0] = [
    str(Path(__file__).resolve().parents[1] / "layers/takt/python"),
    str(Path(__file__).resolve().parents[1]),
]

from takt.api.models import JobCreate  # noqa: E402
from takt.api.service import JobService  # noqa: E402
from takt.local.runtime import LocalRuntime, RuntimeOptions, free_port  # noqa: E402
from takt.models.records import ExecState  # noqa: E402


class Receiver:
    """A loopback HTTP target that answers 200 and counts calls per execution id."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.calls[self.headers.get("Takt-Execution-Id", "")] += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stored", type=int, default=1000, help="jobs stored (not due)")
    parser.add_argument("--due", type=int, default=1000, help="one-off jobs due in one second")
    parser.add_argument("--pollers", type=int, default=4, help="pollers per lane")
    parser.add_argument("--timeout", type=float, default=600, help="give up after (s)")
    args = parser.parse_args()

    runtime = LocalRuntime(RuntimeOptions(port=free_port(), pollers=args.pollers))
    runtime.start()
    receiver = Receiver()
    assert runtime.services is not None
    service = JobService(runtime.services)
    try:
        seeded = time.monotonic()
        far = {"schedule": "0 0 1 1 *", "target": receiver.url}
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda i: service.create("bench", JobCreate(name=f"idle-{i}", **far), None),
                    range(args.stored),
                )
            )
        seed_sec = time.monotonic() - seeded
        due_at = (datetime.now(UTC) + timedelta(seconds=5 + args.due / 150)).replace(microsecond=0)
        with ThreadPoolExecutor(8) as pool:
            jobs = list(
                pool.map(
                    lambda i: service.create(
                        "bench",
                        JobCreate(
                            name=f"due-{i}", run_at=due_at, target=receiver.url, payload={"i": i}
                        ),
                        None,
                    )[0],
                    range(args.due),
                )
            )
        if datetime.now(UTC) >= due_at:
            print("warning: creating the due jobs took past their due time", file=sys.stderr)
        deadline = time.monotonic() + args.timeout
        while len(receiver.calls) < args.due and time.monotonic() < deadline:
            time.sleep(0.2)
        last_call = datetime.now(UTC)
        executions = []
        for job in jobs:
            records, _ = runtime.services.executions.list_for_job(
                "bench", job.job_id, limit=10, cursor=None
            )
            executions.append(records)
    finally:
        runtime.stop()
        receiver.server.shutdown()

    finished = [r for rs in executions for r in rs if r.finished_at is not None]
    missing = sum(1 for rs in executions if not rs)
    duplicated = sum(1 for rs in executions if len(rs) > 1)
    not_succeeded = sum(1 for rs in executions for r in rs if r.state != ExecState.SUCCEEDED)
    double_calls = sum(1 for n in receiver.calls.values() if n > 1)
    lags = [float(r.lag_ms) for rs in executions for r in rs if r.lag_ms is not None]
    end = max((r.finished_at or last_call for r in finished), default=last_call)
    span = (end - due_at).total_seconds()
    report = {
        "settings": {
            "stored_jobs": args.stored,
            "due_jobs": args.due,
            "pollers_per_lane": args.pollers,
            "due_shards": runtime.services.settings.due_shards,
            "machine": "this host, moto server mode in process",
        },
        "seed_jobs_per_sec": round(args.stored / seed_sec, 1) if args.stored else None,
        "due_to_last_completion_sec": round(span, 2),
        "executions_per_sec": round(len(finished) / span, 1) if span > 0 else None,
        "start_lag_ms": {
            "p50": percentile(lags, 0.50) if lags else None,
            "p95": percentile(lags, 0.95) if lags else None,
            "p99": percentile(lags, 0.99) if lags else None,
            "max": max(lags) if lags else None,
            "min": min(lags) if lags else None,
            "mean": round(statistics.fmean(lags), 1) if lags else None,
        },
        "history": {
            "missing": missing,
            "duplicated": duplicated,
            "not_succeeded": not_succeeded,
            "target_called_twice": double_calls,
        },
    }
    print(json.dumps(report, indent=2))
    ok = missing == 0 and duplicated == 0 and not_succeeded == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
