"""How many slots one `takt worker` process carries: its CPU per execution, its memory and how
soon a freed slot takes the next run, at each slot count side by side, with calls that wait on a
real HTTP target on 127.0.0.1.

    .venv/bin/python bench/worker_slots.py --slots 256,400,600 --call-sec 10 --turns 3
    .venv/bin/python bench/worker_slots.py --slots 320 --lease-sec 60 --heartbeat-sec 15

For each slot count N, in turn and in one invocation: a fresh local runtime with no worker of its
own (`pollers=0`: API service, scheduler, watchdog; moto's server in its own process, so its CPU
is not the worker's and not the bench's GIL), `--turns` x N one-off jobs due in the same second,
aimed at a loopback target that answers each POST after `--call-sec` seconds (an asyncio server in
another process, so a thousand open calls cost it next to nothing). The bench waits until the
scheduler has put every message in the lane, and only then starts one real `takt worker
--concurrency N`: the backlog keeps all N slots busy from the first wave to the last, which the
local scheduler could not do live (moto serves a few dozen executions a second, and N slots of
10 s calls need N/10 a second). A message waiting in that backlog is not lost, so the runtime's
watchdog is told not to send it again (`TAKT_PENDING_RESEND_AFTER_SEC`).

It reports, for each N:
- the worker's CPU per execution (utime + stime from /proc, from the worker's start to the last
  completion: lease, call, heartbeats, completion, receives and deletes), and the share of one
  core the worker used over the run;
- its peak RSS (VmHWM) and peak thread count (a busy slot is a slot thread and its call's thread);
- how soon a freed slot takes the next run: the k-th start after the first wave against the k-th
  completion (`turnover_gap_sec`: a slot's completion write, the delete, the receive and the next
  lease), and each run's start against the turn the slots would give it with no overhead at all
  (the k-th run starts after floor(k / N) calls: `start_lag_beyond_its_turn_sec`);
- the rate against N / call-sec, moto's share of a core beside the worker's, and the load
  average before and after. A freed slot waits on moto's answers (the completion, the receive,
  the lease): when moto's share is at what the machine leaves it and the worker's is not, the
  gaps and the rate are moto's, not the worker's.

Every figure depends on this machine's load (2 cores shared with moto and other work): read them
with the load average printed beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT), str(ROOT / "bench")]

from bench.workers import count_succeeded, cpu_sec, start_workers, succeeded  # noqa: E402
from takt.api.jobs import JobService  # noqa: E402
from takt.api.models import JobCreate  # noqa: E402
from takt.wiring import Services  # noqa: E402
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port  # noqa: E402

TENANT = "bench"
POLL_SEC = 0.5
# The backlog waits in the lane on purpose: the watchdog must not send it again meanwhile.
NO_RESEND_SEC = "3600"


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, wait: float) -> None:
    """One keep-alive connection: each request is read whole and answered 200 after `wait`."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            await asyncio.sleep(wait)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        return
    finally:
        writer.close()


async def _serve(port: int, wait: float) -> None:
    server = await asyncio.start_server(
        lambda r, w: _answer(r, w, wait), "127.0.0.1", port, backlog=4096
    )
    print("serving", flush=True)
    async with server:
        await server.serve_forever()


def start_target(wait: float) -> tuple[subprocess.Popen[bytes], str]:
    """The loopback target in its own process (this file with `--serve`), and its URL."""
    port = free_port()
    command = [sys.executable, __file__, "--serve", str(port), "--call-sec", str(wait)]
    served = subprocess.Popen(command, stdout=subprocess.PIPE)  # noqa: S603 - this file
    assert served.stdout is not None
    if served.stdout.readline().decode().strip() != "serving":
        raise RuntimeError("the loopback target did not start")
    return served, f"http://127.0.0.1:{port}/call"


def lane_backlog(svc: Services) -> int:
    """Messages visible in the lanes now (the backlog the worker will take)."""
    total = 0
    for url in svc.settings.lane_urls.values():
        attrs = svc.clients.sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
        )
        total += int(attrs["Attributes"]["ApproximateNumberOfMessages"])
    return total


def proc_status(pid: int) -> dict[str, int]:
    """The worker's peak RSS (VmHWM, KiB) and its threads now, from /proc."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS", "Threads"):
            out[name] = int(value.split()[0])
    return out


def moto_pid() -> int:
    """moto's server process: this process's child that multiprocessing spawned (the runtime's
    `moto_process`), so its CPU can be read beside the worker's."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    raise RuntimeError("moto's server process was not found")


def quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": round(ordered[-1], 3)}


def timings(
    starts: list[datetime], ends: list[datetime], slots: int, call_sec: float, ready: datetime
) -> dict[str, Any]:
    """Turnover gaps, each run's lag beyond its turn and the most runs at once (whether every
    slot was ever busy), from the runs' stored start and finish times (the lease write and the
    completion write), each list in any order.

    With a backlog, the k-th start after the first wave (start N + k) takes the slot the k-th
    completion freed, so their difference is what a slot spends between two runs; and with no
    overhead at all the k-th start would come floor(k / N) calls after the worker was ready.
    """
    starts, ends = sorted(starts), sorted(ends)
    gaps = [(starts[slots + k] - ends[k]).total_seconds() for k in range(len(starts) - slots)]
    beyond = [
        (start - ready).total_seconds() - (k // slots) * call_sec for k, start in enumerate(starts)
    ]
    span = (ends[-1] - ready).total_seconds() if ends else 0.0
    first_wave = (starts[slots - 1] - ready).total_seconds() if len(starts) >= slots else None
    events = sorted([(t, 1) for t in starts] + [(t, -1) for t in ends])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return {
        "peak_runs_at_once": peak,
        "first_wave_filled_sec": None if first_wave is None else round(first_wave, 2),
        "turnover_gap_sec": quantiles(gaps),
        "start_lag_beyond_its_turn_sec": quantiles(beyond),
        "worker_start_to_last_completion_sec": round(span, 2),
        "executions_per_sec": round(len(ends) / span, 1) if span > 0 else None,
        "executions_per_sec_with_no_overhead": round(slots / call_sec, 1),
    }


def wait_for_backlog(svc: Services, due_at: datetime, due: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if datetime.now(UTC) > due_at and lane_backlog(svc) >= due:
            return
        time.sleep(POLL_SEC)
    raise RuntimeError(f"the scheduler did not dispatch {due} runs within {timeout:g} s")


def run_slots(args: argparse.Namespace, slots: int, target: str) -> dict[str, Any]:
    """One slot count on a fresh runtime: the backlog, then one worker until every run ended."""
    load_before = [round(x, 2) for x in os.getloadavg()]
    due = args.turns * slots
    runtime = LocalRuntime(RuntimeOptions(port=free_port(), pollers=0, moto_process=True))
    runtime.start()
    try:
        assert runtime.services is not None
        svc = runtime.services
        service = JobService(svc.api)
        due_at = (datetime.now(UTC) + timedelta(seconds=5 + due / 100)).replace(microsecond=0)
        body: dict[str, Any] = {"run_at": due_at, "target": target, "payload": {"n": 1}}
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda _: service.create(TENANT, JobCreate(**body), None), range(due)))
        wait_for_backlog(svc, due_at, due, args.timeout)
        print(f"{slots} slots: {due} runs in the lane, starting the worker", file=sys.stderr)
        (worker,) = start_workers(runtime, 1, slots)
        try:
            ready = datetime.now(UTC)
            moto = moto_pid()
            cpu_before, moto_before = cpu_sec(worker.pid), cpu_sec(moto)
            threads = 0
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline:
                time.sleep(POLL_SEC)
                threads = max(threads, proc_status(worker.pid)["Threads"])
                if lane_backlog(svc) == 0 and count_succeeded(svc) >= due:
                    break
            cpu, moto_cpu = cpu_sec(worker.pid) - cpu_before, cpu_sec(moto) - moto_before
            wall = (datetime.now(UTC) - ready).total_seconds()
            memory = proc_status(worker.pid)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
        done = succeeded(svc)
        settings = svc.settings
    finally:
        runtime.stop()
    executions = len(done)
    return {
        "slots": slots,
        "due_runs": due,
        "executions": executions,
        "worker_cpu_ms_per_execution": round(1000 * cpu / executions, 2) if executions else None,
        "worker_cpu_share_of_one_core": round(cpu / wall, 3) if wall > 0 else None,
        "moto_cpu_share_of_one_core": round(moto_cpu / wall, 3) if wall > 0 else None,
        "worker_peak_rss_mib": round(memory["VmHWM"] / 1024, 1),
        "worker_peak_threads": threads,
        **timings(
            [r.started_at for r in done if r.started_at is not None],
            [r.finished_at for r in done if r.finished_at is not None],
            slots,
            args.call_sec,
            ready,
        ),
        "attempts": {str(n): sum(len(r.attempts) == n for r in done) for n in (1, 2, 3)},
        "heartbeats": sum(r.heartbeat_seq for r in done),
        "lease_sec": settings.lease_sec,
        "heartbeat_sec": settings.heartbeat_sec,
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", default="256,400,600", help="slot counts, side by side")
    parser.add_argument("--call-sec", type=float, default=10.0, help="how long a call waits")
    parser.add_argument("--turns", type=int, default=3, help="runs a slot makes, at least 3")
    parser.add_argument("--timeout", type=float, default=900, help="give up a phase after (s)")
    parser.add_argument("--lease-sec", type=float, help="the runs' lease (the runtime's default)")
    parser.add_argument("--heartbeat-sec", type=float, help="its renewal (the runtime's default)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve, args.call_sec))
        return 0
    if args.turns < 3:
        parser.error("--turns must be at least 3: every slot turns over at least twice")
    os.environ["TAKT_PENDING_RESEND_AFTER_SEC"] = NO_RESEND_SEC
    # Read by the runtime's settings, and from them passed on in the worker's environment: the
    # seed profile's `--lease-sec 60 --heartbeat-sec 15` spares a 10 s call its heartbeat.
    for name, value in (("LEASE_SEC", args.lease_sec), ("HEARTBEAT_SEC", args.heartbeat_sec)):
        if value:
            os.environ[f"TAKT_{name}"] = str(value)
    os.environ["TAKT_TENANT_LIMITS"] = '{"max_jobs": null, "create_per_sec": null}'
    served, target = start_target(args.call_sec)
    try:
        runs = []
        for n in args.slots.split(","):
            runs.append(run_slots(args, int(n), target))
            # Each run as it ends, so a later run's failure loses none.
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    finally:
        served.terminate()
        served.wait(timeout=30)
    print(
        json.dumps(
            {
                "settings": {
                    "call": f"POST to a loopback target answering after {args.call_sec:g} s",
                    "turns": args.turns,
                    "machine": f"this host ({os.cpu_count()} cores), shared with moto and others",
                },
                "runs": runs,
            },
            indent=2,
        )
    )
    return 0 if all(r["executions"] == r["due_runs"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
