"""`takt local`: run takt on this machine, on moto, with no AWS account."""

from __future__ import annotations

import logging
import shlex
import signal
import sys
from types import FrameType

import click

from takt.local.runtime import (
    LocalRuntime,
    RuntimeOptions,
    describe,
    describe_egress,
    worker_env,
)


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
    "--strict-egress",
    is_flag=True,
    help="Refuse HTTP targets on loopback and private addresses, as a deployed stack does "
    "(by default local mode allows them).",
)
def local(
    host: str,
    port: int,
    tenant: str,
    role: str,
    pollers: int,
    log_level: str,
    strict_egress: bool,
) -> None:
    """Run the API, scheduler, workers and watchdog locally on moto."""
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    runtime = LocalRuntime(
        RuntimeOptions(
            host=host,
            port=port,
            tenant=tenant,
            role=role,
            pollers=pollers,
            log_level=log_level,
            strict_egress=strict_egress,
        )
    )
    runtime.start()

    def _terminate(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    click.echo(f"takt local is running: {describe(runtime)}", err=True)
    click.echo(f"API on {runtime.url}/v1 (Ctrl-C to stop)", err=True)
    if runtime.services is not None:
        click.echo(describe_egress(runtime.services.settings), err=True)
    if runtime.console is not None:
        click.echo(f"console on {runtime.url}/", err=True)
    if pollers == 0 and runtime.services is not None:
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
        runtime.stop()
