"""Workers as real processes: `takt local --pollers 0` (API, scheduler, watchdog; no worker of
its own) and `takt worker` processes on its lanes, killed, paused, stopped and cancelled.

Short leases (`RUNTIME_ENV`: lease 5 s, heartbeat 1 s, watchdog every 1 s, clock margin 2 s) make
every recovery a matter of seconds. Every wait polls with a deadline.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from takt.models.ids import format_time
from takt_cli.commands.main import main
from tests.e2e.harness import ROOT, RUNTIME_ENV, LocalTakt, poll
from tests.e2e.receiver import Receiver, Reply
from tests.e2e.worker_handlers import read_journal
from tests.support.env import checkout_pythonpath

pytestmark = pytest.mark.e2e

Record = Callable[[str, object], None]

LEASE_SEC = float(RUNTIME_ENV["TAKT_LEASE_SEC"])
WATCHDOG_SEC = float(RUNTIME_ENV["TAKT_WATCHDOG_INTERVAL_SEC"])
CLOCK_MARGIN_SEC = 2.0  # the runtime's default TAKT_CLOCK_MARGIN_SEC
# What recovery may add on top of lease + margin + watchdog: a worker's idle long poll (1 s) and
# the lease, read and heartbeat writes on a loaded two-core machine.
RECOVERY_SLACK_SEC = 3.0
DONE_WITHIN_SEC = 30.0
ENV_LINE = "  env "
READY_LINE = "takt worker is running: "
# What a worker logs when its lease expired on its own clock and it stopped unreported.
LEASE_LOST_LINE = "lease expired on the worker's clock"
POOL_SIZE = 2
GRACE_SEC = 0.5


@dataclass
class Runtime:
    takt: LocalTakt
    worker_env: dict[str, str]
    logs: Path


@contextmanager
def workerless_takt_local(logs: Path) -> Iterator[Runtime]:
    """`takt local` without pollers, so only the `takt worker` processes run executions."""
    takt = LocalTakt.start(logs / "takt-local.log", "--pollers", "0")
    try:
        line = poll(
            lambda: [s for s in takt.logs().splitlines() if s.startswith(ENV_LINE)],
            bool,
            10,
            "the worker environment takt local prints",
        )[0]
        words = shlex.split(line.removeprefix(ENV_LINE))
        env = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("."))
        yield Runtime(takt, env, logs)
    finally:
        assert takt.stop() == 0, takt.logs()


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    with workerless_takt_local(tmp_path_factory.mktemp("takt-workers")) as started:
        yield started


class Worker:
    """One `takt worker` process serving `tests.e2e.worker_handlers`, one execution at a time,
    with a short grace so a SIGTERM test ends quickly."""

    def __init__(self, runtime: Runtime) -> None:
        self.log = runtime.logs / f"worker-{uuid.uuid4().hex[:8]}.log"
        env = {
            **os.environ,
            **RUNTIME_ENV,
            **runtime.worker_env,
            "PYTHONPATH": checkout_pythonpath(ROOT),
        }
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "takt_cli.commands.main", "worker"),
                    *("--module", "tests.e2e.worker_handlers"),
                    *("--concurrency", "1", "--grace-sec", str(GRACE_SEC)),
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

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> None:
        poll(
            lambda: (self.process.poll(), READY_LINE in self.output()),
            lambda seen: seen[1] or seen[0] is not None,
            DONE_WITHIN_SEC,
            "a worker's start line",
        )
        assert self.alive, self.output()

    def end(self) -> None:
        if self.alive:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def started(runtime: Runtime) -> Iterator[list[Worker]]:
    """Every worker the module started; whatever is left of them is killed at its end."""
    everyone: list[Worker] = []
    yield everyone
    for worker in everyone:
        worker.end()


@pytest.fixture
def pool(runtime: Runtime, started: list[Worker]) -> list[Worker]:
    """Two live workers: the module's survivors, topped up (starting a worker costs seconds)."""
    live = [w for w in started if w.alive]
    fresh = [Worker(runtime) for _ in range(POOL_SIZE - len(live))]
    started.extend(fresh)
    for worker in fresh:
        worker.wait_ready()
    return [*live, *fresh]


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "journal.jsonl"


def _run(runtime: Runtime, target: str, payload: Any, **extra: Any) -> str:
    """A job calling `target`, run at once (triggered); returns the execution's id."""
    later = datetime.now(UTC) + timedelta(days=1)
    job = runtime.takt.create_job(
        {"run_at": format_time(later), "target": target, "payload": payload, **extra}
    )
    answer = runtime.takt.request("POST", f"/v1/jobs/{job['id']}/trigger")
    assert answer.status == 202, answer.body
    execution_id: str = answer.body["id"]
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


def running_it(pool: list[Worker], start: dict[str, Any]) -> tuple[Worker, Worker]:
    """(the worker whose handler wrote `start`, the other one)."""
    runs = next(w for w in pool if w.pid == start["pid"])
    return runs, next(w for w in pool if w is not runs)


def _lane_messages(runtime: Runtime) -> int:
    """Every message the runtime's lanes hold: waiting, in flight (received, not deleted) or
    delayed, as SQS counts them."""
    env = runtime.worker_env
    sqs = boto3.client(
        "sqs",
        endpoint_url=env["TAKT_AWS_ENDPOINT_URL"],
        region_name=env["AWS_DEFAULT_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )
    counts = (
        sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        for url in json.loads(env["TAKT_LANE_URLS"]).values()
    )
    return sum(int(value) for attributes in counts for value in attributes.values())


def _connected_to(pool: list[Worker], port: int) -> list[Worker]:
    """The workers holding a TCP connection to `port` on loopback (their call in flight), from
    the kernel's socket table: the target's requests do not say which process sent them."""
    sockets = {
        f"socket:[{fields[9]}]"
        for fields in (line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:])
        if int(fields[2].split(":")[1], 16) == port
    }

    def holds(worker: Worker) -> bool:
        for fd in Path(f"/proc/{worker.pid}/fd").iterdir():
            try:
                if str(fd.readlink()) in sockets:
                    return True
            except FileNotFoundError:
                continue  # closed since the listing
        return False

    return [worker for worker in pool if holds(worker)]


def test_a_worker_killed_after_its_lease_deleted_its_message_is_run_once_more_by_the_watchdog(
    runtime: Runtime, pool: list[Worker], record_property: Record
) -> None:
    """Issue 26: a worker deletes its message once it holds the lease, so a `kill -9` during the
    call leaves no message to come back; the watchdog takes the expired lease back and another
    worker calls once more. Judged by a loopback receiver counting the calls."""
    receiver = Receiver().start()
    try:
        # Attempt 1's call hangs until its worker is killed; every later call is answered.
        url = receiver.path([Reply(delay_sec=DONE_WITHIN_SEC * 2)])
        execution_id = _run(runtime, url, {"n": 1})
        receiver.wait_for(url, 1, DONE_WITHIN_SEC)
        # The delete waits in the worker's batch at most its flush interval (0.1 s), well
        # inside the message's visibility of twice the lease.
        held_during_the_call = poll(
            lambda: _lane_messages(runtime),
            lambda held: held == 0,
            LEASE_SEC / 2,
            "issue 26: the leased run's message deleted in the worker's next batch",
        )
        (victim,) = _connected_to(pool, receiver.port)

        victim.process.kill()
        killed_at = time.time()
        victim.process.wait(timeout=10)
        execution = _until(runtime, execution_id, lambda e: e["state"] == "succeeded", "success")
        calls = receiver.hits(url)
    finally:
        receiver.stop()

    recovered_sec = calls[1].at - killed_at
    record_property("kill -9 to next call (s)", round(recovered_sec, 2))
    assert held_during_the_call == 0, (
        "issue 26: once the lease is taken the call holds none of the lanes' messages"
    )
    assert [call.header("Takt-Attempt") for call in calls] == ["1", "2"], (
        "invariant 1: the killed worker's execution is called exactly once more, nothing lost"
    )
    assert (execution["attempt"], _attempts(execution)) == (
        2,
        [(1, "lease_expired"), (2, "succeeded")],
    )
    assert recovered_sec <= LEASE_SEC + CLOCK_MARGIN_SEC + WATCHDOG_SEC + RECOVERY_SLACK_SEC


def test_a_worker_paused_past_its_lease_stops_unreported_and_the_newer_attempt_stands(
    runtime: Runtime, pool: list[Worker], journal: Path
) -> None:
    execution_id = _run(
        runtime, "handler:e2e.sleep", {"journal": str(journal), "first_sec": 2, "then_sec": 1}
    )
    paused, other = running_it(pool, _started(journal)[0])

    paused.process.send_signal(signal.SIGSTOP)
    # Resumed while the other worker holds attempt 2's lease: on its own clock the paused
    # worker's lease expired long ago, so it stops the call and writes nothing.
    _until(
        runtime,
        execution_id,
        lambda e: (e["attempt"], e["state"]) == (2, "running"),
        "attempt 2 running on the other worker",
    )
    paused.process.send_signal(signal.SIGCONT)
    execution = _until(
        runtime, execution_id, lambda e: e["state"] == "succeeded", "the newer attempt's success"
    )
    poll(
        paused.output,
        lambda out: any(LEASE_LOST_LINE in s and execution_id in s for s in out.splitlines()),
        DONE_WITHIN_SEC,
        "the paused worker's lease lost on its own clock",
    )

    assert (execution["attempt"], _attempts(execution)) == (
        2,
        [(1, "lease_expired"), (2, "succeeded")],
    )
    assert runtime.takt.execution(execution_id)["fenced_reports"] == 0
    assert [(s["attempt"], s["pid"]) for s in _started(journal, 2)] == [
        (1, paused.pid),
        (2, other.pid),
    ]


def test_failing_handlers_are_retried_then_dead_while_other_jobs_keep_running(
    runtime: Runtime, pool: list[Worker], journal: Path
) -> None:
    retry = {"max_attempts": 2, "backoff": "fixed", "initial_interval": "1s", "jitter": "none"}
    boom = _run(runtime, "handler:e2e.boom", {"journal": str(journal)}, retry=retry)
    unparseable = _run(runtime, "handler:e2e.count", {"count": "many"}, retry=retry)
    fine = [_run(runtime, "handler:e2e.count", {"count": n}) for n in range(3)]

    raised = _until(runtime, boom, lambda e: e["state"] == "dead", "dead")
    refused = _until(runtime, unparseable, lambda e: e["state"] == "dead", "dead")
    ran = [_until(runtime, e, lambda e: e["state"] == "succeeded", "success") for e in fine]

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
    runtime: Runtime, pool: list[Worker], journal: Path
) -> None:
    execution_id = _run(runtime, "handler:e2e.sleep", {"journal": str(journal), "first_sec": 60})
    stopping, other = running_it(pool, _started(journal)[0])

    stopping.process.send_signal(signal.SIGTERM)
    code = stopping.process.wait(timeout=DONE_WITHIN_SEC)
    execution = _until(runtime, execution_id, lambda e: e["state"] == "succeeded", "success")

    assert code == 0, stopping.output()
    assert "takt worker stopped" in stopping.output()
    assert (execution["attempt"], _attempts(execution)) == (
        1,
        [(1, "given_back"), (1, "succeeded")],
    )
    journaled = read_journal(journal)
    ends = [(e["pid"], e["stop_reason"]) for e in journaled if e["event"] == "end"]
    assert ends == [(stopping.pid, "shutdown"), (other.pid, None)]


def test_cancel_stops_a_running_handler_in_a_worker_process(
    runtime: Runtime, pool: list[Worker], journal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    execution_id = _run(runtime, "handler:e2e.sleep", {"journal": str(journal), "first_sec": 60})
    _started(journal)
    capsys.readouterr()
    cancel = ["--endpoint", runtime.takt.url, "-o", "json", "executions", "cancel", execution_id]

    code = main(cancel)
    requested = json.loads(capsys.readouterr().out)
    execution = _until(runtime, execution_id, lambda e: e["state"] == "cancelled", "cancelled")
    again = main(cancel)
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
    assert [e["stop_reason"] for e in ends] == ["cancelled"]
