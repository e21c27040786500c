"""Workers as real processes: `takt local --pollers 0` (API, scheduler, watchdog; no worker of
its own) and `takt worker` processes on its lanes, killed, paused, stopped and cancelled.

Short leases (`RUNTIME_ENV`: lease 3 s, heartbeat 1 s, watchdog every 1 s, clock margin 2 s) make
every recovery a matter of seconds. Every wait polls with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from takt.cli.main import main
from takt.models.ids import format_time
from tests.e2e.harness import ROOT, RUNTIME_ENV, LocalTakt, poll
from tests.e2e.worker_handlers import read_journal

pytestmark = pytest.mark.e2e

Record = Callable[[str, object], None]

LEASE_SEC = float(RUNTIME_ENV["TAKT_LEASE_SEC"])
WATCHDOG_SEC = float(RUNTIME_ENV["TAKT_WATCHDOG_INTERVAL_SEC"])
CLOCK_MARGIN_SEC = 2.0  # the runtime's default TAKT_CLOCK_MARGIN_SEC
# What recovery may add on top of lease + margin + watchdog: a worker's idle long poll (1 s) and
# the lease, read and heartbeat writes on a loaded two-core machine.
RECOVERY_SLACK_SEC = 3.0
DONE_WITHIN_SEC = 30.0
START_LINE = "takt local is running: "
READY_LINE = "takt worker is running: "


@dataclass
class Runtime:
    takt: LocalTakt
    worker_env: dict[str, str]
    logs: Path


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    logs = tmp_path_factory.mktemp("takt-workers")
    takt = LocalTakt.start(logs / "takt-local.log", "--pollers", "0")
    try:
        line = poll(
            lambda: [s for s in takt.logs().splitlines() if s.startswith(START_LINE)],
            bool,
            10,
            "the start line of takt local",
        )[0]
        yield Runtime(takt, json.loads(line.removeprefix(START_LINE))["worker_env"], logs)
    finally:
        assert takt.stop() == 0, takt.logs()


class Worker:
    """One `takt worker` process serving `tests.e2e.worker_handlers`, one execution at a time."""

    def __init__(self, runtime: Runtime, grace_sec: float) -> None:
        self.log = runtime.logs / f"worker-{uuid.uuid4().hex[:8]}.log"
        env = {
            **os.environ,
            **RUNTIME_ENV,
            **runtime.worker_env,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "takt" / "python"), str(ROOT)]),
        }
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "takt.cli.main", "worker"),
                    *("--module", "tests.e2e.worker_handlers"),
                    *("--concurrency", "1", "--grace-sec", str(grace_sec)),
                    *("--log-level", "WARNING"),
                ],
                cwd=ROOT,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> None:
        poll(
            lambda: (self.process.poll(), READY_LINE in self.output()),
            lambda seen: seen[1] or seen[0] is not None,
            DONE_WITHIN_SEC,
            "a worker's start line",
        )
        assert self.process.poll() is None, self.output()

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def workers(runtime: Runtime) -> Iterator[Callable[..., list[Worker]]]:
    """Start N workers (ready when returned); whatever is left of them is killed at teardown."""
    started: list[Worker] = []

    def start(count: int = 1, grace_sec: float = 25.0) -> list[Worker]:
        batch = [Worker(runtime, grace_sec) for _ in range(count)]
        started.extend(batch)
        for worker in batch:
            worker.wait_ready()
        return batch

    yield start
    for worker in started:
        worker.end()


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "journal.jsonl"


def _job(runtime: Runtime, target: str, payload: Any, **extra: Any) -> dict[str, Any]:
    run_at = datetime.now(UTC) + timedelta(seconds=1)
    return runtime.takt.create_job(
        {"run_at": format_time(run_at), "target": target, "payload": payload, **extra}
    )


def _execution_of(runtime: Runtime, job_id: str) -> str:
    executions = poll(
        lambda: runtime.takt.executions(job_id), bool, DONE_WITHIN_SEC, f"an execution of {job_id}"
    )
    execution_id: str = executions[-1]["id"]
    return execution_id


def _until(
    runtime: Runtime, execution_id: str, done: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    return poll(lambda: runtime.takt.execution(execution_id), done, DONE_WITHIN_SEC, what)


def _started(journal: Path, count: int = 1) -> list[dict[str, Any]]:
    return poll(
        lambda: [e for e in read_journal(journal) if e["event"] == "start"],
        lambda starts: len(starts) >= count,
        DONE_WITHIN_SEC,
        f"{count} handler start(s)",
    )


def _attempts(execution: dict[str, Any]) -> list[tuple[int, str]]:
    return [(a["attempt"], a["outcome"]) for a in execution["attempts"]]


def test_a_worker_killed_mid_run_is_replaced_by_another_with_exactly_one_more_attempt(
    runtime: Runtime,
    workers: Callable[..., list[Worker]],
    journal: Path,
    record_property: Record,
) -> None:
    pool = workers(2)
    job = _job(runtime, "handler:e2e.sleep", {"journal": str(journal), "first_sec": 60})
    [first] = _started(journal)
    victim = next(w for w in pool if w.pid == first["pid"])

    victim.process.kill()
    killed_at = time.time()
    victim.process.wait(timeout=10)
    execution = _until(
        runtime, _execution_of(runtime, job["id"]), lambda e: e["state"] == "succeeded", "success"
    )

    starts = _started(journal, 2)
    survivor = next(w for w in pool if w is not victim)
    recovered_sec = starts[1]["at"] - killed_at
    record_property("kill -9 to next start (s)", round(recovered_sec, 2))
    assert (execution["attempt"], _attempts(execution)) == (
        2,
        [(1, "lease_expired"), (2, "succeeded")],
    )
    assert [(s["attempt"], s["pid"]) for s in starts] == [(1, victim.pid), (2, survivor.pid)]
    assert recovered_sec <= LEASE_SEC + CLOCK_MARGIN_SEC + WATCHDOG_SEC + RECOVERY_SLACK_SEC


def test_a_worker_paused_past_its_lease_is_fenced_out_and_the_newer_attempt_stands(
    runtime: Runtime, workers: Callable[..., list[Worker]], journal: Path
) -> None:
    pool = workers(2)
    job = _job(
        runtime, "handler:e2e.sleep", {"journal": str(journal), "first_sec": 2, "then_sec": 2}
    )
    [first] = _started(journal)
    paused = next(w for w in pool if w.pid == first["pid"])
    execution_id = _execution_of(runtime, job["id"])

    paused.process.send_signal(signal.SIGSTOP)
    # Resumed while the other worker holds attempt 2's lease, so its reports meet a newer lease.
    _until(
        runtime,
        execution_id,
        lambda e: (e["attempt"], e["state"]) == (2, "running"),
        "attempt 2 running on the other worker",
    )
    paused.process.send_signal(signal.SIGCONT)
    execution = _until(
        runtime,
        execution_id,
        lambda e: e["state"] == "succeeded" and e["fenced_reports"] >= 1,
        "the newer attempt's success and the paused worker's rejected report",
    )

    assert (execution["attempt"], _attempts(execution)) == (
        2,
        [(1, "lease_expired"), (2, "succeeded")],
    )
    second = [s for s in _started(journal, 2) if s["attempt"] == 2]
    assert [s["pid"] for s in second] == [next(w for w in pool if w is not paused).pid]


def test_failing_handlers_are_retried_then_dead_while_other_jobs_keep_running(
    runtime: Runtime, workers: Callable[..., list[Worker]], journal: Path
) -> None:
    workers(2)
    retry = {"max_attempts": 2, "backoff": "fixed", "initial_interval": "1s", "jitter": "none"}
    boom = _job(runtime, "handler:e2e.boom", {"journal": str(journal)}, retry=retry)
    unparseable = _job(runtime, "handler:e2e.count", {"count": "many"}, retry=retry)
    fine = [_job(runtime, "handler:e2e.count", {"count": n}) for n in range(3)]

    raised = _until(
        runtime, _execution_of(runtime, boom["id"]), lambda e: e["state"] == "dead", "dead"
    )
    refused = _until(
        runtime, _execution_of(runtime, unparseable["id"]), lambda e: e["state"] == "dead", "dead"
    )
    ran = [
        _until(runtime, _execution_of(runtime, j["id"]), lambda e: e["state"] == "succeeded", "ok")
        for j in fine
    ]

    assert (_attempts(raised), raised["error"]) == (
        [(1, "retry"), (2, "dead")],
        "RuntimeError: boom",
    )
    assert (_attempts(refused), refused["error"]) == (
        [(1, "retry"), (2, "dead")],
        "payload does not fit Count: count",
    )
    assert [e["attempt"] for e in ran] == [1, 1, 1]
    assert [s["attempt"] for s in _started(journal, 2)] == [1, 2]


def test_sigterm_lets_the_worker_exit_and_gives_its_running_execution_to_another(
    runtime: Runtime, workers: Callable[..., list[Worker]], journal: Path
) -> None:
    [stopping] = workers(1, grace_sec=0.5)
    job = _job(runtime, "handler:e2e.sleep", {"journal": str(journal), "first_sec": 60})
    _started(journal)
    workers(1)

    stopping.process.send_signal(signal.SIGTERM)
    code = stopping.process.wait(timeout=DONE_WITHIN_SEC)
    execution = _until(
        runtime, _execution_of(runtime, job["id"]), lambda e: e["state"] == "succeeded", "success"
    )

    assert code == 0, stopping.output()
    assert "takt worker stopped" in stopping.output()
    assert (execution["attempt"], _attempts(execution)) == (
        1,
        [(1, "given_back"), (1, "succeeded")],
    )
    ends = [e for e in read_journal(journal) if e["event"] == "end"]
    assert (ends[0]["pid"], ends[0]["stop_reason"]) == (stopping.pid, "shutdown")


def test_cancel_stops_a_running_handler_in_a_worker_process(
    runtime: Runtime,
    workers: Callable[..., list[Worker]],
    journal: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    workers(1)
    job = _job(runtime, "handler:e2e.sleep", {"journal": str(journal), "first_sec": 60})
    _started(journal)
    execution_id = _execution_of(runtime, job["id"])
    capsys.readouterr()

    code = main(
        ["--endpoint", runtime.takt.url, "-o", "json", "executions", "cancel", execution_id]
    )
    requested = json.loads(capsys.readouterr().out)
    execution = _until(runtime, execution_id, lambda e: e["state"] == "cancelled", "cancelled")
    again = main(["--endpoint", runtime.takt.url, "executions", "cancel", execution_id])
    refused = capsys.readouterr().err

    assert code == 0
    assert (requested["state"], requested["cancel_requested"]) == ("running", True)
    assert (execution["attempt"], _attempts(execution)) == (1, [(1, "cancelled")])
    assert again == 1
    assert refused.startswith("takt: error: 409 ") and "cancelled" in refused
    ends = poll(
        lambda: [e for e in read_journal(journal) if e["event"] == "end"],
        bool,
        DONE_WITHIN_SEC,
        "the handler's end",
    )
    assert ends[0]["stop_reason"] == "cancelled"
