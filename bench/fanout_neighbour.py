"""Another tenant's start lag while one tenant's workflow fans out, on `takt local`: how much of
it is unfair dispatch (queue order) and how much is CPU starvation.

    .venv/bin/python bench/fanout_neighbour.py --width 300 --fair-queues on
    .venv/bin/python bench/fanout_neighbour.py --width 300 --fair-queues off

It runs the local runtime in this process (moto's server, the scheduler, `--pollers` workers per
lane, the watchdog). Tenant B has one interval job every `--every` seconds (catch-up `once`, as
in the report this measures) calling a loopback receiver. Two windows on one runtime:

1. B alone for `--alone` seconds: B's start lag with the machine as it is (its load included);
2. tenant A's workflow, a root task and `--width` tasks depending on it, all calling the same
   receiver, until the run ends (or `--timeout`): B's start lag beside the fan-out.

B's lag is each execution's `started_at - scheduled_time` as its record says, and the
occurrences skipped under catch-up `once`. Beside them, the process's CPU seconds per wall second
in each window (this process runs everything, moto included; two cores are 2.0 at most) and the
load average. `--fair-queues off` serves moto's queues oldest first, as moto itself does
(`takt_cli.local.moto_fairqueues` switched off): B's messages then wait behind every task A's
fan-out queued before them. With fair queues on, what B still waits is the machine's: the CPU
the fan-out takes from everything else. The numbers are this machine's, under whatever else it
runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.models.ids import execution_id
from takt.models.records import ExecState, ExecutionRecord
from takt.store.errors import NotFoundError
from takt.workflows.model import TaskIn
from takt_cli.local import moto_fairqueues
from takt_cli.local.bench import Receiver
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port


def cpu_sec() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def b_lags(svc: Any, tenant: str, job_id: str, since: datetime, until: datetime) -> dict[str, Any]:
    """B's executions scheduled in [since, until): start lags (s) and skipped occurrences."""
    records: list[ExecutionRecord] = []
    cursor = None
    while True:
        page, cursor = svc.executions.list_for_job(tenant, job_id, limit=200, cursor=cursor)
        records.extend(page)
        if not cursor:
            break
    window = [r for r in records if since <= r.scheduled_time < until]
    lags = sorted((r.started_at - r.scheduled_time).total_seconds() for r in window if r.started_at)
    return {
        "occurrences": len(window),
        "skipped": sum(r.state == ExecState.SKIPPED for r in window),
        "skipped_why": dict(
            Counter(r.reason or "" for r in window if r.state == ExecState.SKIPPED).most_common()
        ),
        "not_started": sum(r.started_at is None and r.state != ExecState.SKIPPED for r in window),
        "lag_sec_p50": round(statistics.median(lags), 2) if lags else None,
        "lag_sec_max": round(lags[-1], 2) if lags else None,
    }


def wait_for_end(svc: Any, tenant: str, run_id: str, deadline: float) -> bool:
    while time.monotonic() < deadline:
        try:
            if svc.executions.get(tenant, run_id).state.terminal:
                return True
        except NotFoundError:
            pass
        time.sleep(0.5)
    return False


def run(
    width: int, every: int, alone_sec: float, pollers: int, timeout_sec: float, fair: bool
) -> dict[str, Any]:
    runtime = LocalRuntime(RuntimeOptions(port=free_port(), pollers=pollers, console_dir=None))
    runtime.start()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    receiver = Receiver()
    try:
        svc = runtime.services
        assert svc is not None
        jobs = JobService(svc.api)
        b_job, _ = jobs.create(
            "tenant-b",
            JobCreate(name="steady", interval=f"{every}s", catchup="once", target=receiver.url),
            None,
        )
        alone_from = datetime.now(UTC)
        cpu0, wall0 = cpu_sec(), time.monotonic()
        time.sleep(alone_sec)
        cpu1, wall1 = cpu_sec(), time.monotonic()
        fan_from = datetime.now(UTC)
        due = (fan_from + timedelta(seconds=2)).replace(microsecond=0)
        tasks = [TaskIn(id="root", target=receiver.url)] + [
            TaskIn(id=f"t{i:04d}", target=receiver.url, depends_on=["root"]) for i in range(width)
        ]
        a_job, _ = jobs.create("tenant-a", JobCreate(run_at=due, tasks=tasks), None)
        ended = wait_for_end(
            svc, "tenant-a", execution_id(a_job.job_id, due), time.monotonic() + timeout_sec
        )
        cpu2, wall2 = cpu_sec(), time.monotonic()
        fan_until = datetime.now(UTC)
        return {
            "settings": {
                "width": width,
                "b_every_sec": every,
                "pollers": pollers,
                "fair_queues": fair,
            },
            "b_alone": {
                **b_lags(svc, "tenant-b", b_job.job_id, alone_from, fan_from),
                "cpu_per_wall_sec": round((cpu1 - cpu0) / (wall1 - wall0), 2),
            },
            "b_beside_fanout": {
                **b_lags(svc, "tenant-b", b_job.job_id, fan_from, fan_until),
                "cpu_per_wall_sec": round((cpu2 - cpu1) / (wall2 - wall1), 2),
            },
            "fanout_ended": ended,
            "fanout_sec": round(wall2 - wall1, 1),
            "load_average": [round(load, 2) for load in os.getloadavg()],
        }
    finally:
        runtime.stop()
        receiver.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--width", type=int, default=300)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--alone", type=float, default=20.0)
    parser.add_argument("--pollers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--fair-queues", choices=["on", "off"], default="on")
    args = parser.parse_args()
    if args.fair_queues == "off":
        moto_fairqueues.apply = lambda: None
    fair = args.fair_queues == "on"
    report = run(args.width, args.every, args.alone, args.pollers, args.timeout, fair)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
