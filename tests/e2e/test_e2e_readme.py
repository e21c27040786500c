"""The README's "A first job", run as written against a fresh `takt local`: it must end with a
succeeded execution, its call verified by `takt receive`, and every command the section shows
after it must work on that job.

The commands are read out of README.md (the bash blocks of that section, in order) and run one
by one through a shell-like split, from a folder laid out like the repository (`.venv`, and
`.takt/data` as `make local` would fill it). What differs from a user's terminal, to let the
test run beside others and end by itself: the receiver's port 9001 becomes a free port, the
commands reach this test's `takt local` through TAKT_ENDPOINT instead of port 8080, the
placeholder `<execution id>` becomes the succeeded execution's id, `takt top` (which refreshes
until Ctrl-C) prints once, and the curl example runs as one shell script.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from takt_cli.local.runtime import free_port
from tests.e2e.harness import ROOT, LocalTakt, poll

pytestmark = pytest.mark.e2e

README = ROOT / "README.md"
RECEIVER_PORT = "9001"
COMMAND_TIMEOUT_SEC = 60
# The job fires every 10 s; its first run must have succeeded within two periods and a start.
SUCCEEDED_WITHIN_SEC = 40.0


def first_job_blocks() -> list[list[str]]:
    """The command lines of each bash block under "## A first job"."""
    section = README.read_text().split("## A first job", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    assert len(blocks) >= 2, "the README's first-job section lost its bash blocks"
    return [[line for line in block.splitlines() if line.strip()] for block in blocks]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder with the repository's `.venv`, as the README's commands expect."""
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    return tmp_path


@pytest.fixture
def runtime(workdir: Path) -> Iterator[LocalTakt]:
    started = LocalTakt.start(workdir / "takt-local.log", "--data", str(workdir / ".takt" / "data"))
    try:
        yield started
    finally:
        assert started.stop() == 0, started.logs()


def run(line: str, workdir: Path, env: dict[str, str]) -> str:
    """Run one README command line to its end; its output, after checking it exited 0."""
    words = shlex.split(line, comments=True)
    if words[1:] == ["top"]:
        words.append("--once")
    done = subprocess.run(
        words, cwd=workdir, env=env, capture_output=True, timeout=COMMAND_TIMEOUT_SEC, check=False
    )
    assert done.returncode == 0, f"{line}\n{done.stderr.decode()}"
    return done.stdout.decode()


def shell(block: list[str], workdir: Path, url: str) -> Any:
    """Run a README block as one shell script (the curl example spans lines), aimed at `url`
    instead of port 8080; its output, read as JSON."""
    script = "\n".join(block).replace("http://127.0.0.1:8080", url)
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=workdir,
        capture_output=True,
        timeout=COMMAND_TIMEOUT_SEC,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n{done.stderr.decode()}"
    return json.loads(done.stdout)


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the background command exited with {process.returncode}"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port} after {timeout}s")


def test_the_readme_first_job_ends_with_a_succeeded_execution(
    workdir: Path, runtime: LocalTakt
) -> None:
    port = free_port()
    env = {**os.environ, "TAKT_ENDPOINT": runtime.url}
    background: list[subprocess.Popen[bytes]] = []
    received = workdir / "receive.out"
    first, *then = first_job_blocks()
    try:
        for written in first:
            line = written.replace(RECEIVER_PORT, str(port))
            words = shlex.split(line, comments=True)
            if words[-1] == "&":
                with received.open("wb") as out:
                    process = subprocess.Popen(
                        words[:-1], cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT
                    )
                background.append(process)
                wait_listening(port, process, COMMAND_TIMEOUT_SEC)
                continue
            run(line, workdir, env)

        def executions() -> str:
            return subprocess.run(
                [".venv/bin/takt", "-o", "json", "executions", "list", "hello"],
                cwd=workdir,
                env=env,
                capture_output=True,
                check=True,
            ).stdout.decode()

        succeeded = poll(
            executions,
            lambda out: '"state": "succeeded"' in out,
            SUCCEEDED_WITHIN_SEC,
            "succeeded execution of the README's first job",
        )
        execution_id = next(
            e["id"] for e in json.loads(succeeded)["items"] if e["state"] == "succeeded"
        )
        printed = {
            line: run(line.replace("<execution id>", execution_id), workdir, env)
            for block in then
            if not block[0].startswith("curl ")
            for line in block
        }
        [over_http] = [
            shell(block, workdir, runtime.url) for block in then if block[0].startswith("curl ")
        ]
    finally:
        for process in background:
            process.terminate()
            process.wait(timeout=10)

    assert '"state": "succeeded"' in succeeded
    received_text = received.read_text()
    assert "POST /hello -> 200, signature ok" in received_text, received_text
    shown = "\n".join(printed.values())
    assert execution_id in shown
    assert "attempts:" in shown
    job = runtime.request("GET", "/v1/jobs?name=hello").body["items"][0]
    assert (job["retry"]["max_attempts"], job["timeout_sec"], job["payload"]) == (3, 30, {"n": 1})
    assert (over_http["schedule"], over_http["time_zone"]) == ("0 6 * * *", "Europe/Berlin")
