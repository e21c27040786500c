"""Executions per second through `takt worker` processes, and the CPU each execution costs in
takt's own code, measured with py-spy.

    .venv/bin/python bench/workers.py --workers 1 --due 2000
    .venv/bin/python bench/workers.py --workers 4 --due 2000

It runs the local runtime in this process with no worker of its own (`pollers=0`: API service,
scheduler, watchdog and moto's server), creates `--due` one-off jobs all due in the same second,
aimed at a no-op registered handler, and starts `--workers` real `takt worker` processes on the
runtime's lanes. It reports:

- throughput: executions from the due instant to the last completion, and the steady rate
  between 10 % and 90 % of completions (which leaves out the start and the tail);
- CPU per execution in the worker processes: all of it (utime + stime from /proc), and, from
  py-spy's samples of every worker (on-CPU samples only), the part spent in each step of takt's
  worker (inclusive of the AWS calls each makes) and the part whose innermost frame is takt's own
  code (self time, without botocore, urllib3 or pydantic).

py-spy is looked up on PATH and in `.tools/bin` (`.tools/bin/pip install py-spy`); it is a
measuring tool, not a dependency, and is not in the lock. Without it the CPU split is skipped.
Everything runs on this machine: moto, the scheduler and the workers share its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers/takt/python"), str(ROOT)]

from takt.api.models import JobCreate  # noqa: E402
from takt.api.service import JobService  # noqa: E402
from takt.local.runtime import LocalRuntime, RuntimeOptions, free_port, worker_env  # noqa: E402
from takt.models.records import ExecState, ExecutionRecord  # noqa: E402
from takt.wiring import Services  # noqa: E402

TENANT = "bench"
SAMPLE_RATE = 250
# Inclusive steps: a sample counts for the first of these frames found, innermost first.
STEPS = (
    ("lease", "_lease (", "runner.py"),
    ("heartbeat", "_heartbeat (", "runner.py"),
    ("completion", "_complete (", "runner.py"),
    ("requeue", "_requeue (", "runner.py"),
    ("supervision", "_supervise (", "runner.py"),
    ("handler call", "call (", "router.py"),
    ("receive", "_receive (", "process.py"),
    ("delete message", "_handle (", "process.py"),
)


def py_spy() -> str | None:
    found = shutil.which("py-spy")
    local = ROOT / ".tools/bin/py-spy"
    return found or (str(local) if local.exists() else None)


def cpu_sec(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_workers(
    runtime: LocalRuntime, count: int, concurrency: int
) -> list[subprocess.Popen[bytes]]:
    assert runtime.services is not None
    env = {
        **os.environ,
        **worker_env(runtime.services.settings),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers/takt/python"), str(ROOT / "bench")]),
    }
    workers = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "takt.cli.main", "worker", "--module", "noop_handlers"),
                *("--concurrency", str(concurrency), "--log-level", "WARNING"),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(count)
    ]
    for worker in workers:
        assert worker.stderr is not None
        line = worker.stderr.readline().decode()
        if "takt worker is running" not in line:
            raise RuntimeError(f"worker did not start: {line}{worker.stderr.read().decode()}")
    return workers


def succeeded(svc: Services) -> list[ExecutionRecord]:
    """Every succeeded execution (a scan: the bench's own table holds nothing else)."""
    out: list[ExecutionRecord] = []
    kwargs: dict[str, Any] = {
        "TableName": svc.settings.executions_table,
        "FilterExpression": "#s = :s",
        "ExpressionAttributeNames": {"#s": "state"},
        "ExpressionAttributeValues": {":s": {"S": ExecState.SUCCEEDED.value}},
    }
    while True:
        resp = svc.clients.dynamodb.scan(**kwargs)
        out.extend(ExecutionRecord.from_item(i) for i in resp.get("Items", []))
        if "LastEvaluatedKey" not in resp:
            return out
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def split_samples(paths: list[Path]) -> dict[str, Any]:
    """py-spy raw stacks -> seconds per step (inclusive) and in takt's own frames (self)."""
    steps: Counter[str] = Counter()
    total = own = 0
    for path in paths:
        for line in path.read_text().splitlines():
            stack, _, count_text = line.rpartition(" ")
            count = int(count_text)
            frames = stack.split(";")
            total += count
            if "/takt/" in frames[-1] or "takt/python/takt" in frames[-1]:
                own += count
            for name, function, module in STEPS:
                if any(f.startswith(function) and module in f for f in reversed(frames)):
                    steps[name] += count
                    break
    return {
        "samples": total,
        "sampled_cpu_sec": round(total / SAMPLE_RATE, 2),
        "takt_self_sec": round(own / SAMPLE_RATE, 3),
        "steps_sec": {name: round(steps[name] / SAMPLE_RATE, 3) for name, _, _ in STEPS},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1, help="takt worker processes")
    parser.add_argument("--concurrency", type=int, default=8, help="slots per worker")
    parser.add_argument("--due", type=int, default=2000, help="one-off jobs due in one second")
    parser.add_argument("--timeout", type=float, default=600, help="give up after (s)")
    parser.add_argument("--no-profile", action="store_true", help="skip py-spy")
    args = parser.parse_args()

    runtime = LocalRuntime(RuntimeOptions(port=free_port(), pollers=0, console_dir=None))
    runtime.start()
    assert runtime.services is not None
    svc = runtime.services
    service = JobService(svc)
    spy = None if args.no_profile else py_spy()
    profiles: list[tuple[subprocess.Popen[bytes], Path]] = []
    workers: list[subprocess.Popen[bytes]] = []
    out_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"takt-bench-workers-{os.getpid()}"
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        workers = start_workers(runtime, args.workers, args.concurrency)
        due_at = (datetime.now(UTC) + timedelta(seconds=5 + args.due / 150)).replace(microsecond=0)
        body = {"run_at": due_at, "target": "handler:bench.noop"}
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(lambda _: service.create(TENANT, JobCreate(**body), None), range(args.due))
            )
        if datetime.now(UTC) >= due_at:
            print("warning: creating the jobs took past their due time", file=sys.stderr)
        cpu_before = sum(cpu_sec(w.pid) for w in workers)
        if spy:
            for worker in workers:
                path = out_dir / f"worker-{worker.pid}.txt"
                record = [spy, "record", "--pid", str(worker.pid), "--rate", str(SAMPLE_RATE)]
                command = [*record, "--format", "raw", "--output", str(path), "--nonblocking"]
                profiles.append(
                    (
                        subprocess.Popen(
                            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                        ),
                        path,
                    )
                )
        deadline = time.monotonic() + args.timeout
        done: list[ExecutionRecord] = []
        while len(done) < args.due and time.monotonic() < deadline:
            time.sleep(0.5)
            done = succeeded(svc)
        cpu_after = sum(cpu_sec(w.pid) for w in workers)
    finally:
        for profiler, _ in profiles:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(timeout=30)
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
        runtime.stop()

    finished = sorted(r.finished_at for r in done if r.finished_at is not None)
    span = (finished[-1] - due_at).total_seconds() if finished else 0.0
    low, high = int(0.1 * len(finished)), int(0.9 * len(finished)) - 1
    steady = (finished[high] - finished[low]).total_seconds() if high > low else 0.0
    executions = len(done)
    report: dict[str, Any] = {
        "settings": {
            "workers": args.workers,
            "slots_per_worker": args.concurrency,
            "due_jobs": args.due,
            "handler": "bench.noop (returns at once)",
            "machine": f"this host ({os.cpu_count()} cores): moto, scheduler and workers share it",
        },
        "executions": executions,
        "due_to_last_completion_sec": round(span, 2),
        "executions_per_sec": round(executions / span, 1) if span > 0 else None,
        "steady_executions_per_sec_10_to_90pct": round((high - low) / steady, 1)
        if steady > 0
        else None,
        "worker_cpu_ms_per_execution": round(1000 * (cpu_after - cpu_before) / executions, 2)
        if executions
        else None,
        "attempts": Counter(len(r.attempts) for r in done),
    }
    if profiles and executions:
        split = split_samples([path for _, path in profiles if path.exists()])
        report["profile"] = {
            **split,
            "takt_self_ms_per_execution": round(1000 * split["takt_self_sec"] / executions, 3),
            "steps_ms_per_execution": {
                name: round(1000 * sec / executions, 3) for name, sec in split["steps_sec"].items()
            },
            "raw": str(out_dir),
        }
    print(json.dumps(report, indent=2, default=str))
    return 0 if executions == args.due else 1


if __name__ == "__main__":
    sys.exit(main())
