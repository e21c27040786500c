"""The README's "A first job", run as written against a fresh `takt local`: it must end with a
succeeded execution, its call verified by `takt receive`.

The commands are read out of README.md (the first bash block of that section) and run one by
one through a shell-like split, from a folder laid out like the repository (`.venv`, and
`.takt/data` as `make local` would fill it). Two things differ from a user's terminal, both to
let the test run beside others: the receiver's port 9001 becomes a free port, and the commands
reach this test's `takt local` through TAKT_ENDPOINT instead of port 8080.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from takt_cli.local.runtime import free_port
from tests.e2e.harness import ROOT, LocalTakt, poll

pytestmark = pytest.mark.e2e

README = ROOT / "README.md"
RECEIVER_PORT = "9001"
COMMAND_TIMEOUT_SEC = 60
# The job fires every 10 s; its first run must have succeeded within two periods and a start.
SUCCEEDED_WITHIN_SEC = 40.0


def first_job_commands() -> list[str]:
    """The command lines of the first bash block under "## A first job"."""
    section = README.read_text().split("## A first job", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None, "no bash block in the README's first-job section"
    return [line for line in block.group(1).splitlines() if line.strip()]


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
    try:
        for line in first_job_commands():
            words = shlex.split(line.replace(RECEIVER_PORT, str(port)), comments=True)
            if words[-1] == "&":
                with received.open("wb") as out:
                    process = subprocess.Popen(
                        words[:-1], cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT
                    )
                background.append(process)
                wait_listening(port, process, COMMAND_TIMEOUT_SEC)
                continue
            done = subprocess.run(
                words,
                cwd=workdir,
                env=env,
                capture_output=True,
                timeout=COMMAND_TIMEOUT_SEC,
                check=False,
            )
            assert done.returncode == 0, f"{line}\n{done.stderr.decode()}"

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
    finally:
        for process in background:
            process.terminate()
            process.wait(timeout=10)

    assert '"state": "succeeded"' in succeeded
    printed = received.read_text()
    assert "POST /hello -> 200, signature ok" in printed, printed
