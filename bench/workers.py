"""Executions per second through `takt worker` processes, and the CPU each execution costs in
takt's own code, measured with py-spy.

    .venv/bin/python bench/workers.py --workers 1 --due 1000
    .venv/bin/python bench/workers.py --workers 4 --due 1000
    .venv/bin/python bench/workers.py --workers 1 --due 200 --handler-sec 2.5 --heartbeat-sec 1

It runs the local runtime in this process with no worker of its own (`pollers=0`: API service,
scheduler, watchdog and moto's server), creates `--due` one-off jobs all due in the same second,
aimed at a no-op registered handler, and starts `--workers` real `takt worker` processes on the
runtime's lanes (`--handler-sec` makes each run wait that long instead, so it heartbeats every
`--heartbeat-sec`). It reports:

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
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT)]

from takt.api.jobs import JobService  # noqa: E402
from takt.api.models import JobCreate  # noqa: E402
from takt.models.records import ExecState, ExecutionRecord  # noqa: E402
from takt.store.items import execution_record  # noqa: E402
from takt.wiring import Services  # noqa: E402
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port, worker_env  # noqa: E402

TENANT = "bench"
SAMPLE_RATE = 250
# Inclusive steps (py-spy frames read "Class.method (path:line)"): a sample counts for the
# innermost of these frames on its stack.
STEPS = (
    ("lease", "Lifecycle.lease "),
    ("heartbeat", "ExecutionRunner._heartbeat "),
    ("completion", "ExecutionRunner._complete "),
    ("handler call", "TargetRouter.call "),
    ("supervision", "ExecutionRunner._supervise "),
    ("receive", "WorkerProcess._receive "),
    ("message delete", "MessageDeletes._send "),
)
TAKT_FRAME = "(takt/"


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
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT / "bench")]),
    }
    workers = [
        subprocess.Popen(  # noqa: S603 - our own CLI, with arguments built here
            [
                *(
                    sys.executable,
                    "-m",
                    "takt_cli.commands.main",
                    "worker",
                    "--module",
                    "noop_handlers",
                ),
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


def lanes_empty(svc: Services) -> bool:
    """No message waiting, delayed or running in any lane: three cheap calls, no table read."""
    names: Any = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    for url in svc.settings.lane_urls.values():
        attrs = svc.clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)
        if any(int(v) for v in attrs["Attributes"].values()):
            return False
    return True


def wait_until_done(svc: Services, due_at: datetime, due: int, timeout: float) -> None:
    """Poll the lanes, and count the table only once they drained after the due instant: a
    count scans the whole table, which would load moto, the bottleneck here, and skew the
    numbers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.5)
        drained = datetime.now(UTC) > due_at + timedelta(seconds=2) and lanes_empty(svc)
        if drained and count_succeeded(svc) >= due:
            return


def count_succeeded(svc: Services) -> int:
    """How many executions succeeded so far (the bench's own table holds nothing else)."""
    total = 0
    kwargs: dict[str, Any] = {
        "TableName": svc.settings.executions_table,
        "FilterExpression": "#s = :s",
        "ExpressionAttributeNames": {"#s": "state"},
        "ExpressionAttributeValues": {":s": {"S": ExecState.SUCCEEDED.value}},
        "Select": "COUNT",
    }
    while True:
        resp = svc.clients.dynamodb.scan(**kwargs)
        total += resp.get("Count", 0)
        if "LastEvaluatedKey" not in resp:
            return total
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


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
        out.extend(execution_record(i) for i in resp.get("Items", []))
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
            if TAKT_FRAME in frames[-1]:
                own += count
            for frame in reversed(frames):
                step = next((name for name, prefix in STEPS if frame.startswith(prefix)), None)
                if step is not None:
                    steps[step] += count
                    break
    return {
        "samples": total,
        "sampled_cpu_sec": round(total / SAMPLE_RATE, 2),
        "takt_self_sec": round(own / SAMPLE_RATE, 3),
        "steps_sec": {name: round(steps[name] / SAMPLE_RATE, 3) for name, _ in STEPS},
    }


@dataclass
class Run:
    due_at: datetime
    done: list[ExecutionRecord]
    worker_cpu_sec: float
    runtime_cpu_sec: float
    profiles: list[Path]


def profile(spy: str, pid: int, out_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """py-spy sampling one worker until it is interrupted (on-CPU samples, all threads)."""
    path = out_dir / f"worker-{pid}.txt"
    command = [spy, "record", "--pid", str(pid), "--rate", str(SAMPLE_RATE), "--format", "raw"]
    command += ["--output", str(path), "--nonblocking"]
    spawned = subprocess.Popen(  # noqa: S603 - py-spy, with arguments built here
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return spawned, path


def run(args: argparse.Namespace, runtime: LocalRuntime, spy: str | None) -> Run:
    """Create the due jobs, start the workers (profiled), and wait until every run succeeded."""
    assert runtime.services is not None
    svc = runtime.services
    service = JobService(svc.api)
    out_dir = Path(tempfile.mkdtemp(prefix="takt-bench-workers-"))
    profilers: list[tuple[subprocess.Popen[bytes], Path]] = []
    workers = start_workers(runtime, args.workers, args.concurrency)
    try:
        due_at = (datetime.now(UTC) + timedelta(seconds=5 + args.due / 150)).replace(microsecond=0)
        body: dict[str, Any] = {"run_at": due_at, "target": "handler:bench.noop"}
        if args.handler_sec > 0:
            body.update(target="handler:bench.sleep", payload={"seconds": args.handler_sec})
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(lambda _: service.create(TENANT, JobCreate(**body), None), range(args.due))
            )
        if datetime.now(UTC) >= due_at:
            print("warning: creating the jobs took past their due time", file=sys.stderr)
        worker_cpu = sum(cpu_sec(w.pid) for w in workers)
        runtime_cpu = cpu_sec(os.getpid())
        profilers = [profile(spy, w.pid, out_dir) for w in workers] if spy else []
        wait_until_done(svc, due_at, args.due, args.timeout)
        worker_cpu = sum(cpu_sec(w.pid) for w in workers) - worker_cpu
        runtime_cpu = cpu_sec(os.getpid()) - runtime_cpu
    finally:
        for profiler, _ in profilers:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(timeout=30)
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
    paths = [path for _, path in profilers if path.exists()]
    return Run(due_at, succeeded(svc), worker_cpu, runtime_cpu, paths)


def per_execution(seconds: float, executions: int) -> float | None:
    return round(1000 * seconds / executions, 3) if executions else None


def report(args: argparse.Namespace, result: Run) -> dict[str, Any]:
    finished = sorted(r.finished_at for r in result.done if r.finished_at is not None)
    span = (finished[-1] - result.due_at).total_seconds() if finished else 0.0
    low, high = int(0.1 * len(finished)), int(0.9 * len(finished)) - 1
    steady = (finished[high] - finished[low]).total_seconds() if high > low else 0.0
    executions = len(result.done)
    out: dict[str, Any] = {
        "settings": {
            "workers": args.workers,
            "slots_per_worker": args.concurrency,
            "due_jobs": args.due,
            "handler": f"bench.sleep ({args.handler_sec:g} s)"
            if args.handler_sec > 0
            else "bench.noop (returns at once)",
            "heartbeat_sec": args.heartbeat_sec or "the default",
            "machine": f"this host ({os.cpu_count()} cores): moto, scheduler and workers share it",
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "executions": executions,
        "due_to_last_completion_sec": round(span, 2),
        "executions_per_sec": round(executions / span, 1) if span > 0 else None,
        "steady_executions_per_sec_10_to_90pct": (
            round((high - low) / steady, 1) if steady > 0 else None
        ),
        "worker_cpu_ms_per_execution": per_execution(result.worker_cpu_sec, executions),
        "runtime_cpu_ms_per_execution": per_execution(result.runtime_cpu_sec, executions),
        "attempts": Counter(len(r.attempts) for r in result.done),
        "heartbeats": sum(r.heartbeat_seq for r in result.done),
    }
    if result.profiles and executions:
        split = split_samples(result.profiles)
        out["profile"] = {
            **split,
            "takt_self_ms_per_execution": per_execution(split["takt_self_sec"], executions),
            "steps_ms_per_execution": {
                name: per_execution(sec, executions) for name, sec in split["steps_sec"].items()
            },
            "raw": str(result.profiles[0].parent),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1, help="takt worker processes")
    parser.add_argument("--concurrency", type=int, default=8, help="slots per worker")
    parser.add_argument("--due", type=int, default=1000, help="one-off jobs due in one second")
    parser.add_argument("--timeout", type=float, default=600, help="give up after (s)")
    parser.add_argument("--no-profile", action="store_true", help="skip py-spy")
    parser.add_argument("--handler-sec", type=float, default=0, help="each run waits this long")
    parser.add_argument("--heartbeat-sec", type=float, help="the workers' heartbeat interval")
    args = parser.parse_args()
    if args.heartbeat_sec:
        # Read by the runtime's settings, and from them passed on in the workers' environment.
        os.environ["TAKT_HEARTBEAT_SEC"] = str(args.heartbeat_sec)

    runtime = LocalRuntime(RuntimeOptions(port=free_port(), pollers=0))
    runtime.start()
    try:
        result = run(args, runtime, None if args.no_profile else py_spy())
    finally:
        runtime.stop()
    print(json.dumps(report(args, result), indent=2, default=str))
    return 0 if len(result.done) == args.due else 1


if __name__ == "__main__":
    sys.exit(main())
