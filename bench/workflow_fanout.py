"""Task dispatch rate through a wide workflow, and the AWS requests each task costs, metered.

    .venv/bin/python bench/workflow_fanout.py --width 1000
    .venv/bin/python bench/workflow_fanout.py --width 1000 --shape fan-in

It runs the local runtime in this process (moto's server, the scheduler, `--pollers` workers and
the watchdog) with a meter on every AWS client, creates one workflow through the job service:

- `fan-out`: a root task and `--width` tasks that depend on it;
- `fan-in`: `--width` root tasks and one task that depends on all of them;

every task an HTTP call to a loopback receiver, due two seconds later, and waits for the run to
end. It reports:

- `fanout_dispatch_sec`: how long the root's completion took to make its downstream runnable
  (the root's terminal hook, timed: it records `--width` arrivals, creates and sends as many
  executions), and that rate; and how long the other tasks' hooks took;
- `fanout_started_sec`: from the root's completion to the last downstream task started by a
  worker (bounded by the workers, not the hook);
- `run_sec`: the whole run, start to end;
- the metered AWS requests per task (every function: scheduler, workers, watchdog), by operation,
  and the side effects: each task's target must have been called exactly once.

Everything shares this machine's cores with moto; the numbers are this machine's.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.executions.lifecycle import Lifecycle
from takt.models.ids import execution_id, format_time
from takt.models.records import ExecutionRecord
from takt.store.errors import NotFoundError
from takt.store.executions import ExecutionStore
from takt.workflows.engine import RunEngine
from takt.workflows.model import TaskIn
from takt_cli.local.bench import Receiver
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port
from takt_cli.metering import Meter

TENANT = "bench"


def _tasks(shape: str, width: int, url: str) -> list[TaskIn]:
    many = [f"t{i:04d}" for i in range(width)]
    if shape == "fan-out":
        return [
            TaskIn(id="root", target=url),
            *(TaskIn(id=t, target=url, depends_on=["root"]) for t in many),
        ]
    return [
        *(TaskIn(id=t, target=url) for t in many),
        TaskIn(id="sink", target=url, depends_on=many),
    ]


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def _timed_hooks() -> list[tuple[str, float]]:
    """Time every task's terminal hook (task id, seconds): the root's is the fan-out dispatch."""
    timings: list[tuple[str, float]] = []
    real = RunEngine.task_ended

    def timed(self: RunEngine, record: ExecutionRecord, state: Any, now: datetime) -> None:
        start = time.monotonic()
        real(self, record, state, now)
        timings.append((record.task_id or "", time.monotonic() - start))

    RunEngine.task_ended = timed  # type: ignore[method-assign]
    return timings


def _wait_for_end(executions: ExecutionStore, run_id: str, timeout_sec: float) -> None:
    deadline = time.monotonic() + timeout_sec
    while time.monotonic() < deadline:
        try:
            if executions.get(TENANT, run_id).state.terminal:
                return
        except NotFoundError:
            pass
        time.sleep(0.2)


def run(shape: str, width: int, pollers: int, timeout_sec: float) -> dict[str, Any]:
    hooks = _timed_hooks()
    meter = Meter()
    runtime = LocalRuntime(
        RuntimeOptions(port=free_port(), pollers=pollers, console_dir=None), meter=meter
    )
    runtime.start()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    receiver = Receiver()
    try:
        svc = runtime.services
        assert svc is not None
        due = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
        body = JobCreate(run_at=due, tasks=_tasks(shape, width, receiver.url))
        job, _ = JobService(svc.api).create(TENANT, body, None)
        before = meter.usage()
        run_id = execution_id(job.job_id, due)
        _wait_for_end(svc.executions, run_id, timeout_sec)
        usage = meter.usage() - before
        engine = Lifecycle(svc.settings, svc.jobs, svc.executions, svc.lanes).runs
        view = engine.view(TENANT, run_id)
        records = {t: rs[-1] for t, rs in view.executions.items()}
        tasks = len(view.tasks)
        hub = "root" if shape == "fan-out" else "sink"
        others = [r for t, r in records.items() if t != hub]
        report: dict[str, Any] = {
            "settings": {
                "shape": shape,
                "width": width,
                "pollers": pollers,
                "moto": "in process",
                "due": format_time(due),
            },
            "run_state": view.run.state.value,
            "tasks": tasks,
            "tasks_succeeded": sum(1 for t in view.tasks if t.state == "succeeded"),
            "target_calls": sum(receiver.calls.values()),
            "targets_called_twice": sum(1 for n in receiver.calls.values() if n > 1),
            "run_sec": _seconds(view.run.started_at, view.run.finished_at),
        }
        if shape == "fan-out" and "root" in records:
            root_done = records["root"].finished_at
            started = max((r.started_at for r in others if r.started_at), default=None)
            dispatch = max((sec for task, sec in hooks if task == "root"), default=None)
            report["fanout_dispatch_sec"] = None if dispatch is None else round(dispatch, 3)
            report["fanout_dispatch_per_sec"] = round(width / dispatch, 1) if dispatch else None
            report["fanout_started_sec"] = _seconds(root_done, started)
        leaf_hooks = sorted(sec for task, sec in hooks if task != hub)
        if leaf_hooks:
            report["other_hooks_p50_ms"] = round(leaf_hooks[len(leaf_hooks) // 2] * 1000, 1)
            report["other_hooks_max_ms"] = round(leaf_hooks[-1] * 1000, 1)
        if shape == "fan-in" and "sink" in records:
            last_up = max((r.finished_at for r in others if r.finished_at), default=None)
            report["fanin_last_upstream_to_sink_created_sec"] = _seconds(
                last_up, records["sink"].created_at
            )
        per_task = usage.to_dict(per=tasks or 1)
        report["aws_calls_per_task_total"] = round(usage.total_calls() / (tasks or 1), 2)
        report["aws_calls_per_task"] = per_task["aws_calls"]
        report["aws_calls_per_task_by_function"] = per_task["aws_calls_by_function"]
        report["errors_per_task"] = per_task["errors"]
        report["dynamodb_write_units_per_task"] = per_task["dynamodb_write_units_total"]
        report["dynamodb_read_units_per_task"] = per_task["dynamodb_read_units_total"]
        report["sqs_billed_requests_per_task"] = round(
            usage.total_sqs_requests(include_empty_receives=False) / (tasks or 1), 3
        )
        return report
    finally:
        runtime.stop()
        receiver.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=["fan-out", "fan-in"], default="fan-out")
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--pollers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    print(json.dumps(run(args.shape, args.width, args.pollers, args.timeout), indent=2))


if __name__ == "__main__":
    main()
