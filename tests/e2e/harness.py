"""Starting `takt local` as a user would, and talking to its API over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import urllib3

from takt_cli.local.runtime import free_port
from tests.support.env import checkout_pythonpath

ROOT = Path(__file__).resolve().parents[2]

# Short leases and sweeps so retries, timeouts and recoveries happen within seconds. A worker
# acts only while its lease has more than the clock margin (2 s) left: 5 s leases with 1 s
# heartbeats leave it 3 s, room for a heartbeat slowed by a loaded machine.
RUNTIME_ENV = {
    "TAKT_LEASE_SEC": "5",
    "TAKT_HEARTBEAT_SEC": "1",
    "TAKT_WATCHDOG_INTERVAL_SEC": "1",
    "TAKT_PENDING_RESEND_AFTER_SEC": "3",
    "TAKT_DUE_SHARDS": "4",
}
STARTUP_TIMEOUT_SEC = 60.0
POLL_INTERVAL_SEC = 0.1

T = TypeVar("T")


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


class LocalTakt:
    """A `takt local` process: its API URL, its log, and a small client for its API."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log
        self._http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(total=30))

    @classmethod
    def start(cls, log: Path, *args: str, in_background: bool = False) -> LocalTakt:
        """Start `takt local` (with extra command-line `args`) and wait until it is healthy;
        in memory unless `args` name a `--data` folder, so no test shares the default one.
        `in_background` starts it as a script's `takt local &` is: with SIGINT ignored."""
        port = free_port()
        if "--data" not in args:
            args = ("--in-memory", *args)
        env = {
            **os.environ,
            **RUNTIME_ENV,
            "PYTHONPATH": checkout_pythonpath(ROOT),
        }
        argv = [sys.executable, "-m", "takt_cli.commands.main", "local", "--port", str(port), *args]
        if in_background:
            # What a non-interactive shell does to a background command before it runs it.
            argv = ["bash", "-c", "trap '' INT; exec \"$@\"", "takt", *argv]
        with log.open("wb") as sink:
            process = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        runtime = cls(process, f"http://127.0.0.1:{port}", log)
        try:
            runtime._wait_healthy()
        except BaseException:
            runtime.stop()
            raise
        return runtime

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SEC
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"takt local exited with {self.process.returncode}:\n{self.logs()}"
                )
            try:
                if self._http.request("GET", self.url + "/healthz", timeout=1).status == 200:
                    return
            except urllib3.exceptions.HTTPError:
                pass
            time.sleep(POLL_INTERVAL_SEC)
        raise RuntimeError(f"takt local not healthy after {STARTUP_TIMEOUT_SEC}s:\n{self.logs()}")

    def stop(self) -> int | None:
        """SIGTERM, as Ctrl-C or a service manager would; kill only if it does not stop."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Answer:
        data = None
        all_headers = dict(headers or {})
        if body is not None:
            data = json.dumps(body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        resp = self._http.request(method, self.url + path, body=data, headers=all_headers)
        text = resp.data.decode() if resp.data else ""
        return Answer(
            status=resp.status,
            headers={k.lower(): v for k, v in resp.headers.items()},
            body=json.loads(text) if text else None,
        )

    def create_job(self, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.request("POST", "/v1/jobs", body)
        assert answer.status == 201, answer.body
        job: dict[str, Any] = answer.body
        return job

    def delete_job(self, job_id: str) -> None:
        self.request("DELETE", f"/v1/jobs/{job_id}")

    def executions(self, job_id: str) -> list[dict[str, Any]]:
        """Every execution of a job, newest first."""
        items: list[dict[str, Any]] = []
        path = f"/v1/jobs/{job_id}/executions?limit=200"
        while True:
            answer = self.request("GET", path)
            assert answer.status == 200, answer.body
            items.extend(answer.body["items"])
            if not answer.body["next_cursor"]:
                return items
            path = f"/v1/jobs/{job_id}/executions?limit=200&cursor={answer.body['next_cursor']}"

    def execution(self, execution_id: str) -> dict[str, Any]:
        answer = self.request("GET", f"/v1/executions/{execution_id}")
        assert answer.status == 200, answer.body
        execution: dict[str, Any] = answer.body
        return execution


def poll(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float, what: str) -> T:
    """Fetch until `done` holds; fail with the last value once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"no {what} within {timeout:g}s; last seen: {value!r}")
        time.sleep(POLL_INTERVAL_SEC)
