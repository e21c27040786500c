"""`takt local --data DIR` keeps jobs and their history across a clean stop and a `kill -9`.

Each test runs the real `takt local` process on a fresh data folder, stops it (SIGTERM, or
SIGKILL right after a write was acknowledged), starts a new one on the same folder and reads
what is there over the API; work that was queued when the process died is finished by the new
one, rebuilt from the tables.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import ROOT, LocalTakt, poll
from tests.e2e.receiver import Receiver

pytestmark = pytest.mark.e2e

DONE_WITHIN_SEC = 30.0


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[LocalTakt]]:
    """Every `takt local` a test starts, killed at the end if the test left it running."""
    runtimes: list[LocalTakt] = []
    yield runtimes
    for runtime in runtimes:
        if runtime.process.poll() is None:
            runtime.process.kill()
            runtime.process.wait()


def start(started: list[LocalTakt], tmp_path: Path, data: Path, *args: str) -> LocalTakt:
    log = tmp_path / f"takt-local-{len(started)}.log"
    runtime = LocalTakt.start(log, "--data", str(data), *args)
    started.append(runtime)
    return runtime


def kill_9(runtime: LocalTakt) -> None:
    runtime.process.send_signal(signal.SIGKILL)
    assert runtime.process.wait(timeout=10) == -signal.SIGKILL


def succeeded_execution(runtime: LocalTakt, job_id: str) -> dict[str, Any]:
    answer = runtime.request("POST", f"/v1/jobs/{job_id}/trigger")
    assert answer.status == 202, answer.body
    execution_id = answer.body["id"]
    return poll(
        lambda: runtime.execution(execution_id),
        lambda e: e["state"] == "succeeded",
        DONE_WITHIN_SEC,
        f"execution {execution_id} succeeded",
    )


def job_body(receiver: Receiver, name: str) -> dict[str, Any]:
    return {"name": name, "interval": "1h", "target": receiver.path(), "payload": {"n": name}}


def test_a_job_and_its_history_survive_kill_9(
    tmp_path: Path, data: Path, started: list[LocalTakt], receiver: Receiver
) -> None:
    first = start(started, tmp_path, data)
    old = first.create_job(job_body(receiver, "old"))
    ran = succeeded_execution(first, old["id"])
    # Acknowledged, then killed at once: well inside the 2 s the issue allows.
    before = first.request("GET", f"/v1/jobs/{old['id']}").body
    new = first.create_job(job_body(receiver, "new"))
    kill_9(first)

    second = start(started, tmp_path, data)

    assert second.request("GET", f"/v1/jobs/{new['id']}").body == new
    assert second.request("GET", f"/v1/jobs/{old['id']}").body == before
    assert second.execution(ran["id"]) == ran
    assert [e["id"] for e in second.executions(old["id"])] == [ran["id"]]
    assert succeeded_execution(second, new["id"])["job_id"] == new["id"]


def test_work_queued_at_kill_9_is_finished_after_the_restart(
    tmp_path: Path, data: Path, started: list[LocalTakt], receiver: Receiver
) -> None:
    # No workers in the first process: the execution waits in its lane when the process dies,
    # and the lane's message dies with it.
    first = start(started, tmp_path, data, "--pollers", "0")
    job = first.create_job(job_body(receiver, "queued"))
    answer = first.request("POST", f"/v1/jobs/{job['id']}/trigger")
    assert answer.status == 202, answer.body
    kill_9(first)

    second = start(started, tmp_path, data)

    poll(
        lambda: second.execution(answer.body["id"])["state"],
        lambda state: state == "succeeded",
        DONE_WITHIN_SEC,
        "the queued execution finished by the new process",
    )
    assert len(receiver.hits(job["target"])) == 1


def test_a_clean_stop_keeps_everything_in_one_snapshot(
    tmp_path: Path, data: Path, started: list[LocalTakt], receiver: Receiver
) -> None:
    first = start(started, tmp_path, data)
    job = first.create_job(job_body(receiver, "clean"))
    ran = succeeded_execution(first, job["id"])
    before = first.request("GET", f"/v1/jobs/{job['id']}").body
    assert first.stop() == 0

    files = sorted(p.name for p in data.iterdir() if p.name.startswith(("journal", "snapshot")))
    second = start(started, tmp_path, data)

    assert files == ["journal-2.log", "snapshot-2.json"]
    assert second.request("GET", f"/v1/jobs/{job['id']}").body == before
    assert second.execution(ran["id"]) == ran
    assert f"data: {data} (" in second.logs()


def test_sigint_stops_a_takt_local_started_in_the_background_cleanly(
    tmp_path: Path, data: Path, started: list[LocalTakt], receiver: Receiver
) -> None:
    # `takt local &` from a script: the shell ignores SIGINT for it, and `kill -INT` (Ctrl-C's
    # signal) must still stop it cleanly, with its one snapshot written.
    first = LocalTakt.start(tmp_path / "background.log", "--data", str(data), in_background=True)
    started.append(first)
    job = first.create_job(job_body(receiver, "interrupted"))

    first.process.send_signal(signal.SIGINT)

    assert first.process.wait(timeout=30) == 0
    files = sorted(p.name for p in data.iterdir() if p.name.startswith(("journal", "snapshot")))
    assert files == ["journal-2.log", "snapshot-2.json"]
    second = start(started, tmp_path, data)
    assert second.request("GET", f"/v1/jobs/{job['id']}").body == job


def test_a_second_takt_local_on_the_same_folder_refuses_in_one_line(
    tmp_path: Path, data: Path, started: list[LocalTakt]
) -> None:
    start(started, tmp_path, data)

    second = subprocess.run(
        [
            sys.executable,
            "-m",
            "takt_cli.commands.main",
            "local",
            "--port",
            "0",
            "--data",
            str(data),
        ],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert second.returncode != 0
    assert second.stderr.strip().splitlines() == [
        f"takt: error: {data} is in use by another takt local (--data DIR for another folder)"
    ]
