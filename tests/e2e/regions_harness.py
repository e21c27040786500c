"""A `takt local --regions` run for the e2e tests and the region fault scenarios: the parent
process, and each region's process id, API and moto as the run printed them."""

from __future__ import annotations

import functools
import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import urllib3

from tests.e2e.harness import ROOT, RUNTIME_ENV, STARTUP_TIMEOUT_SEC, LocalTakt, poll

REGION_LINE = re.compile(
    r"^(?P<region>[a-z0-9-]+): pid (?P<pid>\d+), API (?P<api>http://[^ ]+)/v1, "
    r"moto (?P<moto>http://[^ ]+)$"
)
WITNESS_LINE = re.compile(r"^witness: moto (?P<moto>http://[^ ]+) ")


@dataclass(frozen=True)
class Region:
    """One region's process as the run printed it; `api` makes requests to its API only."""

    name: str
    pid: int
    url: str
    moto: str
    api: LocalTakt

    def dynamodb(self) -> Any:
        """A raw client on this region's moto: the oracle reads the tables with it."""
        return _client(self.moto, self.name)

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        # A killed child stays a zombie until the parent reaps it: that is gone too.
        return _state(self.pid) != "Z"


class RegionsRun:
    """`takt local --regions ...` started by `start`, stopped by `stop` (SIGTERM, as Ctrl-C)."""

    def __init__(self, process: subprocess.Popen[bytes], witness: str, regions: list[Region]):
        self.process = process
        self.witness = witness
        self.regions = regions

    @classmethod
    def start(
        cls, log: Path, regions: str, *args: str, env: dict[str, str] | None = None
    ) -> RegionsRun:
        names = regions.split(",")
        port = _free_ports(len(names))
        argv = [
            sys.executable,
            "-m",
            "takt_cli.commands.main",
            "local",
            "--regions",
            regions,
            "--port",
            str(port),
            *args,
        ]
        full_env = {
            **os.environ,
            **RUNTIME_ENV,
            **(env or {}),
            # This checkout's code first (a mutants copy's, mutated), whatever the venv points at.
            "PYTHONPATH": os.pathsep.join(str(ROOT / part) for part in ("layers", "cli", ".")),
        }
        with log.open("wb") as sink:
            process = subprocess.Popen(
                argv, cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=sink
            )
        try:
            lines = _read_lines(process, len(names) + 1, log)
            # The regions' own logs follow on the same pipe: drain it into the log, or a full
            # pipe blocks every process that writes a line, and dispatch with it.
            threading.Thread(target=_drain, args=(process, log), daemon=True).start()
            witness = WITNESS_LINE.match(lines[0])
            assert witness, lines[0]
            found = []
            for line in lines[1:]:
                match = REGION_LINE.match(line)
                assert match, f"a region's line names its pid, API and moto: {line!r}"
                url = match["api"]
                found.append(
                    Region(
                        name=match["region"],
                        pid=int(match["pid"]),
                        url=url,
                        moto=match["moto"],
                        api=LocalTakt(process, url, log),
                    )
                )
            run = cls(process, witness["moto"], found)
            for region in found:
                poll(
                    functools.partial(_healthy, region),
                    bool,
                    STARTUP_TIMEOUT_SEC,
                    f"region {region.name} healthy",
                )
        except BaseException:
            process.kill()
            process.wait()
            raise
        return run

    def region(self, name: str) -> Region:
        return next(region for region in self.regions if region.name == name)

    def lease(self) -> dict[str, str] | None:
        """The lease item, read raw from the witness."""
        item = (
            _client(self.witness, self.regions[0].name)
            .get_item(TableName="takt-regions", Key={"pk": {"S": "lease"}}, ConsistentRead=True)
            .get("Item")
        )
        if item is None:
            return None
        return {name: str(next(iter(value.values()))) for name, value in item.items()}

    def stop(self) -> int | None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def _client(endpoint: str, region: str) -> Any:
    return boto3.session.Session(
        region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing"
    ).client("dynamodb", endpoint_url=endpoint)


def _healthy(region: Region) -> bool:
    try:
        return region.api.request("GET", "/healthz").status == 200
    except urllib3.exceptions.HTTPError:
        return False


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "gone"
    return stat.rsplit(")", 1)[1].split()[0]


def _free_ports(count: int) -> int:
    """A first port with `count * 2 - 1` free ports after it (the regions' APIs, then their
    motos), below the range the system hands out to outgoing connections, which could take one
    of them before a region's process binds it."""
    for _ in range(100):
        first = random.randrange(20_000, 32_000 - 2 * count)
        if all(_port_free(first + offset) for offset in range(2 * count)):
            return first
    raise AssertionError(f"no {2 * count} free ports in a row")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _drain(process: subprocess.Popen[bytes], log: Path) -> None:
    assert process.stdout is not None
    fd = process.stdout.fileno()
    with log.open("ab") as sink:
        while chunk := os.read(fd, 65536):
            sink.write(chunk)
            sink.flush()


def _read_lines(process: subprocess.Popen[bytes], count: int, log: Path) -> list[str]:
    """The first `count` lines the run prints on stdout, within the start-up timeout. Read from
    the descriptor (a buffered readline would take later lines into a buffer select cannot
    see)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    text = b""
    deadline = time.monotonic() + STARTUP_TIMEOUT_SEC
    while text.count(b"\n") < count:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        if not ready:
            raise AssertionError(f"takt local --regions printed {text!r} only:\n{log.read_text()}")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise AssertionError(f"takt local --regions ended:\n{log.read_text()}")
        text += chunk
    return text.decode().splitlines()[:count]
