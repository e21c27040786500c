"""`takt local`: run takt on this machine, on moto, with no AWS account.

Its tables are kept in a data folder (`.takt/data` under the directory it starts in, or
`--data DIR`) and survive a stop or a crash; `--in-memory` keeps nothing.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Protocol

import click

from takt_cli.commands.errors import claim_port

DEFAULT_DATA_DIR = Path(".takt") / "data"
STOPPING = "takt local stopping: executions still running are cut short"
STILL_STOPPING = "takt local is still stopping: it writes its data, then exits"


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=int, help="API port.")
@click.option(
    "--tenant",
    default="local",
    show_default=True,
    help="The tenant the local API treats every caller as.",
)
@click.option(
    "--role",
    default="admin",
    show_default=True,
    type=click.Choice(["admin", "write", "read", "worker"]),
    help="The role of that caller (docs/SECURITY.md).",
)
@click.option(
    "--pollers",
    default=4,
    show_default=True,
    type=int,
    help="Pollers per lane feeding the worker handler (half as many on the low lane); 0 runs "
    "no worker here, for `takt worker` processes started with the env this prints.",
)
@click.option(
    "--log-level",
    default="WARNING",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]),
)
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
    envvar="TAKT_LOCAL_DATA",
    help="Folder that keeps the jobs and their history across restarts (env TAKT_LOCAL_DATA).",
)
@click.option(
    "--in-memory",
    is_flag=True,
    help="Keep nothing: every job and execution is gone when takt local stops.",
)
@click.option(
    "--strict-egress",
    is_flag=True,
    help="Refuse HTTP targets on loopback and private addresses, as a deployed stack does "
    "(by default local mode allows them).",
)
@click.option(
    "--regions",
    default=None,
    help="Run each of these regions (a comma list, e.g. us-east-1,us-east-2; the first holds "
    "the region lease first) as a process of its own, in memory, with its API on --port and the "
    "next ports, and their tables replicated between them. Prints each region's process id, API "
    "and moto, one line each, on stdout.",
)
@click.option(
    "--replication-delay-ms",
    default=300,
    show_default=True,
    type=click.IntRange(min=0),
    help="With --regions: how long after a write it reaches the other regions.",
)
@click.option("--moto-port", type=int, default=None, hidden=True)
@click.option("--peer", "peers", multiple=True, hidden=True)
@click.option("--exit-with-parent", is_flag=True, hidden=True)
def local(
    host: str,
    port: int,
    tenant: str,
    role: str,
    pollers: int,
    log_level: str,
    data_dir: Path,
    in_memory: bool,
    strict_egress: bool,
    regions: str | None,
    replication_delay_ms: int,
    moto_port: int | None,
    peers: tuple[str, ...],
    exit_with_parent: bool,
) -> None:
    """Run the API, scheduler, workers and watchdog locally on moto, keeping the data.

    `--moto-port`, `--peer REGION=ENDPOINT` and `--exit-with-parent` are how `--regions` starts
    each region's process; they are hidden from the help."""
    if regions is not None:
        source = click.get_current_context().get_parameter_source("data_dir")
        if source not in (None, click.core.ParameterSource.DEFAULT):
            raise click.ClickException(
                "--regions keeps every region in memory (each region's replica is its moto's): "
                "drop --data or TAKT_LOCAL_DATA"
            )
        _run_regions(
            regions,
            host,
            port,
            replication_delay_ms,
            [
                f"--tenant={tenant}",
                f"--role={role}",
                f"--pollers={pollers}",
                f"--log-level={log_level}",
                *(["--strict-egress"] if strict_egress else []),
            ],
        )
        return
    if exit_with_parent:
        from takt_cli.local.regions import exit_with_parent as watch_parent  # noqa: PLC0415 - only a region's process watches its parent

        watch_parent()
    from takt_cli.local.persistence import DataDirInUseError, DataStore  # noqa: PLC0415 - only this command loads the local runtime and moto

    claim_port(host, port)
    folder = None if in_memory else data_dir.resolve()
    try:
        data = None if folder is None else DataStore(folder)
    except DataDirInUseError as exc:
        raise click.ClickException(f"{exc} (--data DIR for another folder)") from None
    from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, describe_egress, worker_env  # noqa: PLC0415 - only this command loads the local runtime and moto

    # Other libraries' lines, with the time as takt's own JSON lines write it (RFC 3339, UTC).
    plain = logging.Formatter(
        "%(asctime)s.%(msecs)03dZ %(name)s %(levelname)s %(message)s", "%Y-%m-%dT%H:%M:%S"
    )
    plain.converter = time.gmtime
    stream = logging.StreamHandler()
    stream.setFormatter(plain)
    logging.basicConfig(level=log_level, handlers=[stream])
    runtime = LocalRuntime(
        RuntimeOptions(
            host=host,
            port=port,
            tenant=tenant,
            role=role,
            pollers=pollers,
            log_level=log_level,
            strict_egress=strict_egress,
            data_dir=folder,
            moto_port=moto_port,
            peers=dict(peer.split("=", 1) for peer in peers),
            replication_delay_ms=replication_delay_ms,
        ),
        data=data,
    )
    runtime.start()

    def _terminate(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    # Ctrl-C's signal stops it cleanly even when started as `takt local &` from a script, whose
    # shell has it ignore SIGINT (Python then installs no handler of its own).
    signal.signal(signal.SIGINT, _terminate)
    assert runtime.services is not None
    if folder is None:
        kept = "in memory (--in-memory): everything is gone when it stops"
    else:
        kept = f"{folder} ({runtime.items_loaded} items loaded)"
    if folder is None:
        signed = "signed with each tenant's key, from a master made anew at each start"
    else:
        signed = f"signed with each tenant's key, from the master in {folder / 'webhook-master'}"
    console = f"console {runtime.url}/, " if runtime.console is not None else ""
    click.echo(
        f"takt local on {runtime.url}: {console}API {runtime.url}/v1 (Ctrl-C to stop)\n"
        f"  data: {kept}\n"
        f"  webhooks: {signed} (takt receive fetches the key)\n"
        f"  aws: moto at {runtime.moto_endpoint} (its DynamoDB tables are what the data keeps)\n"
        f"  {describe_egress(runtime.services.settings)}",
        err=True,
    )
    if pollers == 0:
        env = worker_env(runtime.services.settings)
        exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
        click.echo(
            "no workers of its own (--pollers 0); start one from the repository with:\n"
            f"  env {exports} .venv/bin/takt worker --module YOUR_HANDLERS",
            err=True,
        )
    sys.stderr.flush()
    try:
        runtime.wait()
    finally:
        stop(runtime)
    _exit_now()


class Stoppable(Protocol):
    def stop(self) -> None: ...


def stop(runtime: Stoppable) -> None:
    """Say it stops, at once, before anything waits (the user knows the Ctrl-C was heard), then
    stop. A second Ctrl-C (or SIGTERM) during the stop is answered with a line: raised inside
    the stop, it would cut the data's last write short and print a traceback. Nothing is logged
    after the line: an invocation the stop cuts short fails its calls to the stopped moto, and
    its lines would bury the one that says so (the run comes back at the next start)."""
    logging.disable(logging.CRITICAL)
    click.echo(STOPPING, err=True)

    def _again(signum: int, frame: FrameType | None) -> None:
        click.echo(STILL_STOPPING, err=True)

    signal.signal(signal.SIGINT, _again)
    signal.signal(signal.SIGTERM, _again)
    runtime.stop()


def _run_regions(
    regions: str, host: str, port: int, replication_delay_ms: int, child_args: list[str]
) -> None:
    """`takt local --regions`: the witness here, one child process per region, until stopped."""
    from takt_cli.local.regions import LocalRegions, RegionsError, parse_regions  # noqa: PLC0415 - only this command loads the local runtime and moto

    try:
        names = parse_regions(regions)
    except RegionsError as exc:
        raise click.ClickException(str(exc)) from None
    for offset in range(len(names)):
        claim_port(host, port + offset)
    run = LocalRegions(names, host, port, child_args, replication_delay_ms)

    def _terminate(signum: int, frame: FrameType | None) -> None:
        run.request_stop()

    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    try:
        run.start()
        click.echo(f"witness: moto {run.witness_endpoint} (the regions lease table)")
        for child in run.children:
            click.echo(child.line(host))
        sys.stdout.flush()
        run.wait()
    finally:
        click.echo(STOPPING, err=True)
        run.stop()


def _exit_now() -> None:
    """End the process as soon as the runtime has stopped and its data is written: an execution
    still running is cut short as a crash would cut it (its lease brings it back at the next
    start), rather than holding the exit until its target answers and printing the errors of
    its calls to the stopped moto; and the interpreter's teardown of moto's state (about a
    second) is skipped."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
