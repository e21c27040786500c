"""`takt local --regions R1,R2[,R3]`: one process per region, as a real outage needs.

The parent process holds the witness: a moto server with the `regions` lease table only, which
every region's process reads and writes at `TAKT_REGION_LEASE_ENDPOINT_URL`, as AWS's MRSC table
(docs/ARCHITECTURE.md, "Regions") keeps its quorum when one region fails. Each region is a child
process, a normal `takt local` runtime in memory with its own moto, its region's settings
(`TAKT_REGION`, `TAKT_REGIONS`), its API on the next port, and the peers' moto endpoints its tables
replicate from (takt_cli.local.replication). A kill -9 of a child is that region's outage;
SIGSTOP and SIGCONT are a pause and a return.

A child never outlives the parent: it reads its standard input, a pipe from the parent, and stops
when that pipe closes, which the kernel does when the parent exits however it ends (kill -9
included). The parent stops every child when it is told to stop (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

import boto3

from takt.config import Settings
from takt.resources import REGIONS
from takt_cli.local.persistence import WsgiApp
from takt_cli.local.runtime import FAKE_CREDENTIALS, _moto_server, free_port

log = logging.getLogger("takt_cli.local")

# A region's name as AWS spells them (us-east-1, eu-central-2, ...), or any such local name.
REGION_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
# The lease table's name a deployment uses too (Settings' default; infra.tables names it so).
LEASE_TABLE = str(Settings.model_fields["region_lease_table"].default)
# The region in a SigV4 credential scope: Credential=KEY/DATE/REGION/SERVICE/aws4_request.
_SCOPE_REGION = re.compile(r"(Credential=[^/]+/\d+/)[^/]+/")
# How long a child has to stop on SIGTERM before it is killed.
STOP_TIMEOUT_SEC = 15.0


class RegionsError(ValueError):
    """`--regions` names no valid set of regions."""


def parse_regions(text: str) -> tuple[str, ...]:
    """The regions of `--regions`, in order (the first holds the lease first): two or more
    distinct names."""
    names = tuple(name.strip() for name in text.split(","))
    bad = [name for name in names if not REGION_NAME.match(name)]
    if bad:
        raise RegionsError(
            f"--regions: {bad[0]!r} is not a region name (lowercase letters, digits and '-')"
        )
    if len(set(names)) != len(names):
        raise RegionsError(f"--regions names a region twice: {text}")
    if len(names) < 2:
        raise RegionsError("--regions needs two regions or more, e.g. us-east-1,us-east-2")
    return names


@dataclass(frozen=True)
class RegionProcess:
    """One region's child process and where it answers."""

    region: str
    process: subprocess.Popen[bytes]
    api_port: int
    moto_port: int

    def line(self, host: str) -> str:
        return (
            f"{self.region}: pid {self.process.pid}, API http://{host}:{self.api_port}/v1, "
            f"moto http://{host}:{self.moto_port}"
        )


class LocalRegions:
    """The witness and one `takt local` child per region; `start`, then `wait`, then `stop`."""

    def __init__(
        self,
        regions: Sequence[str],
        host: str,
        port: int,
        child_args: Sequence[str],
        replication_delay_ms: int,
    ) -> None:
        """`child_args` are the options every region's `takt local` gets as they were given
        (tenant, role, pollers, log level, egress)."""
        self.regions = tuple(regions)
        self.host = host
        self.port = port
        self._child_args = list(child_args)
        self._delay_ms = replication_delay_ms
        self._witness: Any = None
        self.witness_endpoint = ""
        self.endpoints: dict[str, str] = {}
        self.children: list[RegionProcess] = []
        self._stop = threading.Event()

    def start(self) -> None:
        # moto's server logs each call to the witness: not an event of takt's.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        for key, value in FAKE_CREDENTIALS.items():
            os.environ.setdefault(key, value)
        witness_port = free_port(self.host)
        self._witness = _moto_server(
            self.host, witness_port, functools.partial(one_region, region=self.regions[0])
        )
        self._witness.start()
        self.witness_endpoint = f"http://{self.host}:{witness_port}"
        table = os.environ.get("TAKT_REGION_LEASE_TABLE", LEASE_TABLE)
        witness = boto3.session.Session(region_name=self.regions[0]).client(
            "dynamodb", endpoint_url=self.witness_endpoint
        )
        witness.create_table(**REGIONS.create_table_kwargs(table))
        moto_ports = dict(zip(self.regions, self._moto_ports(), strict=True))
        endpoints = {region: f"http://{self.host}:{port}" for region, port in moto_ports.items()}
        self.endpoints = endpoints
        for offset, region in enumerate(self.regions):
            peers = {other: url for other, url in endpoints.items() if other != region}
            self.children.append(
                self._spawn(region, self.port + offset, moto_ports[region], peers, table)
            )

    def _moto_ports(self) -> list[int]:
        """The regions' moto ports: the first free ones after their API ports. Not ports the
        system hands out to outgoing connections (`free_port`): a child binds its port seconds
        after this choice, and such a port may be taken by any connection meanwhile."""
        ports: list[int] = []
        candidate = self.port + len(self.regions)
        while len(ports) < len(self.regions):
            if _bindable(self.host, candidate):
                ports.append(candidate)
            candidate += 1
        return ports

    def _spawn(
        self, region: str, api_port: int, moto_port: int, peers: Mapping[str, str], table: str
    ) -> RegionProcess:
        env = {
            **os.environ,
            "TAKT_REGION": region,
            "TAKT_REGIONS": ",".join(self.regions),
            "TAKT_REGION_LEASE_TABLE": table,
            "TAKT_REGION_LEASE_ENDPOINT_URL": self.witness_endpoint,
            # Where its API writes a change to an existing job: the lease holder's moto.
            "TAKT_REGION_ENDPOINTS": json.dumps(self.endpoints),
        }
        argv = [
            sys.executable,
            "-m",
            "takt_cli.commands.main",
            "local",
            "--in-memory",
            "--host",
            self.host,
            "--port",
            str(api_port),
            "--moto-port",
            str(moto_port),
            "--replication-delay-ms",
            str(self._delay_ms),
            "--exit-with-parent",
            *[f"--peer={other}={url}" for other, url in peers.items()],
            *self._child_args,
        ]
        # Its standard input is the pipe whose end tells it the parent is gone. A session of its
        # own: a Ctrl-C at the terminal reaches the parent alone, which stops each child once.
        process = subprocess.Popen(  # noqa: S603 - this interpreter running takt, with its own options
            argv, env=env, stdin=subprocess.PIPE, start_new_session=True
        )
        return RegionProcess(region, process, api_port, moto_port)

    def wait(self) -> None:
        """Block until told to stop; a child that ends meanwhile (a region's outage) is said
        once, and the others go on."""
        ended: set[str] = set()
        while not self._stop.wait(0.5):
            for child in self.children:
                code = child.process.poll()
                if code is not None and child.region not in ended:
                    ended.add(child.region)
                    log.warning(
                        "region %s (pid %d) ended with %s", child.region, child.process.pid, code
                    )

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        """SIGTERM every child (SIGCONT too, in case it is paused), kill any that has not
        stopped after `STOP_TIMEOUT_SEC`, then stop the witness."""
        for child in self.children:
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)
                child.process.send_signal(signal.SIGCONT)
        for child in self.children:
            try:
                child.process.wait(STOP_TIMEOUT_SEC)
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()
            _close(child.process.stdin)
        if self._witness is not None:
            self._witness.stop()


def one_region(app: WsgiApp, region: str) -> WsgiApp:
    """The witness's app, answering every region's request from `region`'s tables: moto keeps
    tables per region (it reads the region from the request's signature), while the lease table
    of an MRSC global table is one table every region reads and writes."""

    def serve(environ: dict[str, Any], start_response: Any) -> Any:
        signed = environ.get("HTTP_AUTHORIZATION")
        if signed:
            environ["HTTP_AUTHORIZATION"] = _SCOPE_REGION.sub(rf"\g<1>{region}/", signed)
        return app(environ, start_response)

    return serve


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _close(pipe: IO[bytes] | None) -> None:
    if pipe is not None:
        pipe.close()


def exit_with_parent() -> None:
    """In a region's child: stop this process (as SIGTERM would) once standard input ends,
    which happens when the parent that holds its other end exits, however it exits."""

    def watch() -> None:
        # The file descriptor, not sys.stdin: a thread blocked in a buffered read holds its
        # lock, which the interpreter's shutdown then waits for and reports as a fatal error.
        while os.read(0, 4096):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
