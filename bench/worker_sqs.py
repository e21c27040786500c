"""SQS requests per execution on the Fargate path: the claim's sends and `takt worker`'s own
receives and deletes, counted by the project's meter on a real run.

    .venv/bin/python bench/worker_sqs.py --due 500 --concurrency 50
    .venv/bin/python bench/worker_sqs.py --due 500 --concurrency 200 --lanes default,low

It runs the local runtime in this process with no worker of its own (`pollers=0`: API service,
scheduler, watchdog and moto's server), creates `--due` one-off jobs all due in the same second,
aimed at a loopback HTTP receiver that answers at once, and runs one `WorkerProcess` (what
`takt worker` runs) in this process on its own SQS client. `takt_cli.metering.Meter` counts the
requests SQS would bill, from the jobs' creation until every execution succeeded and the lanes
are empty: the runtime's client (the claimer's sends, the watchdog's) and the worker's (receives,
deletes, visibility changes). It reports them per execution; the empty receives, apart, are the
worker's idle polling over the metered seconds (the wait for the due second included), a cost
of its time rather than of the executions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT)]

from bench.workers import count_succeeded, lanes_empty  # noqa: E402
from takt.api.jobs import JobService  # noqa: E402
from takt.api.models import JobCreate  # noqa: E402
from takt.wiring import build_services  # noqa: E402
from takt.worker.process import WorkerOptions, WorkerProcess  # noqa: E402
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port  # noqa: E402
from takt_cli.metering.meter import Meter, Usage  # noqa: E402

TENANT = "bench"
POLL_SEC = 0.5


class Answer(BaseHTTPRequestHandler):
    """The target: 200 with an empty JSON body, at once."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a line a call would cost more than the call."""


def by_operation(usage: Usage) -> dict[str, int]:
    out: dict[str, int] = {}
    for (_, operation), n in usage.sqs_requests.items():
        out[operation] = out.get(operation, 0) + n
    return dict(sorted(out.items()))


def run(args: argparse.Namespace, runtime: LocalRuntime, target: str) -> dict[str, Any]:
    assert runtime.services is not None
    svc = runtime.services
    runtime_meter, worker_meter = Meter(), Meter()
    runtime_meter.attach(svc.clients.sqs)
    worker_svc = build_services(svc.settings)
    worker_meter.attach(worker_svc.clients.sqs)
    # The bench's own looks at the lanes and the table, on clients nobody meters.
    probe = build_services(svc.settings)
    process = WorkerProcess(
        svc.settings,
        worker_svc.clients.sqs,
        worker_svc.runner,
        WorkerOptions(lanes=tuple(args.lanes.split(",")), concurrency=args.concurrency),
    )
    polling = threading.Thread(target=process.run, name="poll")
    polling.start()
    service = JobService(svc.api)
    due_at = (datetime.now(UTC) + timedelta(seconds=5 + args.due / 150)).replace(microsecond=0)
    body: dict[str, Any] = {"run_at": due_at, "target": target}
    runtime_start, worker_start = runtime_meter.usage(), worker_meter.usage()
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: service.create(TENANT, JobCreate(**body), None), range(args.due)))
    if datetime.now(UTC) >= due_at:
        print("warning: creating the jobs took past their due time", file=sys.stderr)
    deadline = time.monotonic() + args.timeout
    done = 0
    try:
        while time.monotonic() < deadline:
            time.sleep(POLL_SEC)
            if datetime.now(UTC) > due_at + timedelta(seconds=2) and lanes_empty(probe):
                done = count_succeeded(probe)
                if done >= args.due:
                    break
    finally:
        process.stop()
        polling.join()
    metered_sec = time.monotonic() - started
    sent = by_operation(runtime_meter.usage() - runtime_start)
    worker = by_operation(worker_meter.usage() - worker_start)
    per = max(1, done)
    return {
        "settings": {
            "due_jobs": args.due,
            "slots": args.concurrency,
            "lanes": args.lanes,
            "target": "a loopback HTTP receiver answering 200 at once",
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "executions": done,
        "metered_sec": round(metered_sec, 1),
        "runtime_sqs_requests": sent,
        "worker_sqs_requests": worker,
        "per_execution": {
            "sends": round(sum(n for op, n in sent.items() if op.startswith("Send")) / per, 3),
            "receives": round(worker.get("ReceiveMessage", 0) / per, 3),
            "empty_receives": round(worker.get("ReceiveMessage (empty)", 0) / per, 3),
            "deletes": round(
                (worker.get("DeleteMessage", 0) + worker.get("DeleteMessageBatch", 0)) / per, 3
            ),
            "worker_total": round(sum(worker.values()) / per, 3),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--due", type=int, default=500, help="one-off jobs due in one second")
    parser.add_argument("--concurrency", type=int, default=50, help="the worker's slots")
    parser.add_argument("--timeout", type=float, default=300, help="give up after (s)")
    parser.add_argument(
        "--lanes", default="high,default,low", help="the lanes the worker polls (fargateLanes)"
    )
    args = parser.parse_args()
    # Read by the runtime's settings: the bench creates its jobs faster than a tenant may.
    os.environ["TAKT_TENANT_LIMITS"] = '{"max_jobs": null, "create_per_sec": null}'
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    runtime = LocalRuntime(RuntimeOptions(port=free_port(), pollers=0))
    runtime.start()
    try:
        report = run(args, runtime, f"http://127.0.0.1:{server.server_address[1]}/t")
    finally:
        runtime.stop()
        server.shutdown()
    print(json.dumps(report, indent=2))
    return 0 if report["executions"] == args.due else 1


if __name__ == "__main__":
    sys.exit(main())
