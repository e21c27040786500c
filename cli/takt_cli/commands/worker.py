"""`takt worker`: run executions from the lanes in a long-running process (Fargate, or beside
`takt local`), with registered handlers from the given modules.

It reads the same `TAKT_*` environment as the functions (tables, lane URLs, endpoint, lease and
heartbeat); see `takt.worker.process` for how it polls, and for what SIGTERM does.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import click

from takt.aws import make_cloudwatch_client
from takt.config import LANES, MAX_WORKER_SLOTS, Settings, get_settings
from takt.handlers import load_modules
from takt.wiring import build_services
from takt.worker.metrics import FLUSH_INTERVAL_SEC, MetricPublisher
from takt.worker.process import WorkerOptions, WorkerProcess
from takt_cli.commands.context import CliError


def worker_settings(settings: Settings, concurrency: int, tenant: str | None) -> Settings:
    """The deployment's settings as a worker of `concurrency` slots runs them: an HTTP target's
    host keeps a pooled connection for each slot (all of them may call one host at once; with
    fewer, each call beyond the pool would open and drop a connection), and with `tenant` only
    that tenant's executions are leased."""
    update: dict[str, object] = {"http_pool_size": max(settings.http_pool_size, concurrency)}
    if tenant is not None:
        update["worker_tenant"] = tenant
    return settings.model_copy(update=update)


@click.command()
@click.option(
    "-m",
    "--module",
    "modules",
    multiple=True,
    metavar="MODULE",
    help="A module whose import registers handlers (repeatable); also TAKT_HANDLER_MODULES.",
)
@click.option(
    "--lanes",
    default=",".join(LANES),
    show_default=True,
    help="Lanes to poll, highest priority first.",
)
@click.option(
    "--concurrency",
    default=4,
    show_default=True,
    type=click.IntRange(1, MAX_WORKER_SLOTS),
    help="Executions run at once.",
)
@click.option(
    "--tenant",
    default=None,
    help="Lease only this tenant's executions (others are sent back for another worker); "
    "also TAKT_WORKER_TENANT.",
)
@click.option(
    "--grace-sec",
    default=25.0,
    show_default=True,
    type=click.FloatRange(0, 3600),
    help="On SIGTERM, how long running executions may finish before they are given back "
    "(keep it under the container's stop timeout: 30 s by default on ECS).",
)
@click.option(
    "--metrics-flush-sec",
    "flush_sec",
    default=FLUSH_INTERVAL_SEC,
    show_default=True,
    type=click.FloatRange(1, 3600),
    help="How often the worker sends its metrics (ScheduleLag, Succeeded, ...) to CloudWatch.",
)
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]),
)
def worker(
    modules: tuple[str, ...],
    lanes: str,
    concurrency: int,
    tenant: str | None,
    grace_sec: float,
    flush_sec: float,
    log_level: str,
) -> None:
    """Run executions from the lanes until SIGTERM or Ctrl-C."""
    logging.getLogger("takt").setLevel(log_level)
    # As `python -m` does: handler modules in the current directory import without PYTHONPATH.
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)
    settings = worker_settings(get_settings(), concurrency, tenant)
    try:
        handlers = load_modules([*settings.handler_module_names, *modules])
    except ImportError as exc:
        raise CliError(f"cannot import a handler module: {exc}") from exc
    chosen = tuple(lane.strip() for lane in lanes.split(",") if lane.strip())
    missing = [lane for lane in chosen if lane not in settings.lane_urls]
    if not chosen or missing:
        known = ", ".join(settings.lane_urls) or "none: set TAKT_LANE_URLS"
        raise CliError(f"unknown lanes {missing or [lanes]}; configured lanes: {known}")
    svc = build_services(settings)
    publisher = MetricPublisher(make_cloudwatch_client(settings), settings.metrics_namespace)
    process = WorkerProcess(
        settings,
        svc.clients.sqs,
        svc.runner,
        WorkerOptions(lanes=chosen, concurrency=concurrency, grace_sec=grace_sec),
        emit=publisher.add,
    )
    signals: list[int] = []

    def _note(signum: int, frame: FrameType | None) -> None:
        # Only note it: the main thread may hold a lock the stop needs at this very instant.
        signals.append(signum)

    signal.signal(signal.SIGTERM, _note)
    signal.signal(signal.SIGINT, _note)
    polling = threading.Thread(target=process.run, name="poll")
    polling.start()
    publishing_stop = threading.Event()
    publishing = threading.Thread(
        target=publisher.run, args=(publishing_stop, flush_sec, process.sample_busy), name="metrics"
    )
    publishing.start()
    details = {
        "worker_id": svc.runner.worker_id,
        "pid": os.getpid(),
        "lanes": list(chosen),
        "concurrency": concurrency,
        "tenant": settings.worker_tenant,
        "handlers": handlers,
    }
    click.echo(f"takt worker is running: {json.dumps(details)}", err=True)
    while polling.is_alive():
        polling.join(0.2)
        if signals and not process.stopping:
            click.echo(f"takt worker stopping: {grace_sec:g}s for running executions", err=True)
            process.stop()
    # The last flush sends what the final executions recorded.
    publishing_stop.set()
    publishing.join()
    click.echo(f"takt worker stopped after {process.processed} messages", err=True)
