"""Logging, metrics and tracing, set up once for every function (Powertools).

Metric names are the contract with the CDK dashboard and alarms: `infra/metric_names.py` lists
them and docs/DEPLOY.md documents each. Tracing is on in Lambda (active tracing is enabled by the
CDK app) and off elsewhere, as Powertools decides from the environment.

Handlers record metrics with `add_metric` rather than `metrics.add_metric`: in Lambda both are
the same EMF line, but `add_metric` also hands each value to in-process listeners. The local
runtime listens, because Powertools Metrics is disabled there and its metric set is shared by
every thread, so reading it back would double-count or lose values under concurrency.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

# An invocation that had nothing to count (a duplicate message, an idle sweep) is normal here.
warnings.filterwarnings("ignore", message="No application metrics to publish")

SERVICE = "takt"
"""The `service` dimension of every metric, and the service name in every log line."""

# Timestamps in RFC 3339, UTC, with `Z`: the one time format the API, the CLI and the logs share.
logger = Logger(service=SERVICE, utc=True, datefmt="%Y-%m-%dT%H:%M:%S.%FZ")
# Audit lines (an admin acting for another tenant) are written at CRITICAL through a child of
# `logger`: same handler and format, but above every level a deployment may set (`logLevel` goes
# up to ERROR, and Lambda's log-level filter reads the line's level), so no setting drops them.
audit_logger = Logger(service=SERVICE, child=True)
metrics = Metrics(namespace="takt", service=SERVICE)
tracer = Tracer(service=SERVICE)

MetricListener = Callable[[str, MetricUnit, float], None]

_listeners: list[MetricListener] = []
_listeners_lock = threading.Lock()
# The worker runs a batch's records in threads of its own (takt.worker.batch); Powertools' metric
# set is a plain dict that flushes itself at 100 metrics, so adds are made one at a time.
_metrics_lock = threading.Lock()


def add_metric(name: str, unit: MetricUnit, value: float) -> None:
    """Record one value of a metric: as EMF through Powertools, and to every listener."""
    with _metrics_lock:
        metrics.add_metric(name=name, unit=unit, value=value)
    with _listeners_lock:
        listeners = tuple(_listeners)
    for listener in listeners:
        listener(name, unit, value)


def add_counts(counts: Mapping[str, int]) -> None:
    """Record each of `counts` that is not zero, as a Count.

    For the loops that run every minute whether or not there is work (the scheduler's ticks, the
    watchdog's sweeps): CloudWatch bills a custom metric for every hour it receives a value, a
    zero as much as any other, so publishing an idle loop's zeros cost $0.30 a month per metric
    (`takt cost idle`). Nothing reads a missing value as more than nothing: every alarm on these
    metrics treats missing data as not breaching (`infra/observability.py`), and the stats count
    a minute without values as none.
    """
    for name, value in counts.items():
        if value:
            add_metric(name, MetricUnit.Count, value)


def listen(listener: MetricListener) -> Callable[[], None]:
    """Hand every metric value recorded in this process to `listener`; returns the way to stop."""
    with _listeners_lock:
        _listeners.append(listener)

    def stop() -> None:
        with _listeners_lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return stop


@contextmanager
def log_keys(**keys: str | int | None) -> Iterator[None]:
    """Add `keys` (job and execution ids) to every log line of this thread until the block ends.

    Thread-local rather than `logger.append_keys`: the local runtime runs many handler
    invocations at once in one process, and appended keys are shared by all of them.
    """
    present = {name: value for name, value in keys.items() if value is not None}
    logger.thread_safe_append_keys(**present)
    try:
        yield
    finally:
        logger.thread_safe_remove_keys(list(present))


__all__ = [
    "SERVICE",
    "MetricListener",
    "MetricUnit",
    "add_metric",
    "audit_logger",
    "listen",
    "log_keys",
    "logger",
    "metrics",
    "tracer",
]
