"""The metrics and the log line one processed message yields, and how a long-running worker
publishes them.

The worker function and `takt worker` (the Fargate service) both serve the lanes, so both must
emit what the dashboard and the alarms read (ScheduleLag, Succeeded, Failed, ...): `record_outcome`
is the one mapping from an outcome to metric values, whoever emits them.

In Lambda the values go out as EMF through Powertools, flushed at the end of each invocation. A
long-running process has no such end, and on Fargate its standard output reaches CloudWatch Logs
through the `awslogs` driver, which does not mark the events as EMF, so no metric would be
extracted from them. `MetricPublisher` therefore collects the values and sends them with
PutMetricData, once a flush interval, under the same namespace and `service` dimension.

Logs are billed by the byte (docs/CAPACITY.md, "Cost per million"), so a run that went as planned
is logged at DEBUG (`log_outcome`: kept only by the invocations or tasks Powertools samples, 1 %),
and what it did is counted in one INFO line a batch (the worker function) or a flush interval
(`MetricPublisher`, on Fargate). Every other outcome keeps its own line with its execution id: a
failure at WARNING, anything else that did not run as planned (skipped, cancelled, sent back) at
INFO.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from takt.observability import SERVICE, MetricUnit, logger

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_cloudwatch.type_defs import MetricDatumTypeDef

    from takt.worker.runner import RunOutcome

Emit = Callable[[str, MetricUnit, float], None]

# The execution states after which the start lag is known and final for this attempt.
_LAGGED_STATES = frozenset({"succeeded", "failed", "dead", "retry_wait"})
_STATE_COUNTS = {
    "succeeded": "Succeeded",
    "failed": "Failed",
    "dead": "Dead",
    "retry_wait": "Retried",
    "fenced": "StaleReportFenced",
    "lease_lost": "LeaseLost",
}
# PutMetricData takes at most 150 distinct values per datum and 1,000 data per request.
MAX_VALUES_PER_DATUM = 150
MAX_DATA_PER_REQUEST = 1000
FLUSH_INTERVAL_SEC = 60.0
# The outcomes that are a failure of the run or of its report: each is logged at WARNING.
FAILED_STATES = frozenset(
    {"failed", "dead", "retry_wait", "fenced", "lease_lost", "region_fenced", "missing"}
)
# A run that went as planned (or a duplicate of one): logged at DEBUG, counted in the summary.
_PLANNED_STATES = frozenset({"succeeded"})


def record_outcome(outcome: RunOutcome, emit: Emit) -> None:
    """Emit the metrics of one processed message: its start lag and its outcome's count."""
    if outcome.lag_ms is not None and outcome.state in _LAGGED_STATES:
        emit("ScheduleLag", MetricUnit.Milliseconds, outcome.lag_ms)
    name = _STATE_COUNTS.get(outcome.state)
    if name:
        emit(name, MetricUnit.Count, 1)


def outcome_level(outcome: RunOutcome) -> int:
    """The level an outcome's line is logged at: DEBUG for a success, WARNING for a failure,
    INFO for the rest."""
    if outcome.state in _PLANNED_STATES:
        return logging.DEBUG
    return logging.WARNING if outcome.state in FAILED_STATES else logging.INFO


def log_outcome(outcome: RunOutcome, **keys: str | int) -> None:
    """Log one processed message's line ("execution processed") at its outcome's level, with
    `keys` (the execution's id where the caller's log keys do not already carry it)."""
    log = {
        logging.DEBUG: logger.debug,
        logging.INFO: logger.info,
        logging.WARNING: logger.warning,
    }[outcome_level(outcome)]
    log("execution processed", extra={"state": outcome.state, "detail": outcome.detail, **keys})


class InvocationMetrics:
    """One worker invocation's metrics, emitted once at its end (`emit_into`).

    A batch of 100 messages would otherwise add 100 `Succeeded` values of 1, and Powertools
    writes an EMF document each time a metric reaches 100 values, so one invocation would log
    two or three documents. Here each count is summed into one value, and each run's start lag
    stays a value of its own (the p99 alarm needs the distribution): with the counts emitted
    first, a batch's metrics fill one document, flushed once when the invocation ends (or when
    its hundredth lag value is added, after which nothing is left to flush). Thread-safe: the
    batch's runs record from threads of their own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, MetricUnit], float] = {}
        self._values: list[tuple[str, MetricUnit, float]] = []

    def add(self, name: str, unit: MetricUnit, value: float) -> None:
        with self._lock:
            if unit == MetricUnit.Count:
                self._counts[(name, unit)] = self._counts.get((name, unit), 0.0) + value
            else:
                self._values.append((name, unit, value))

    def counts(self) -> dict[str, int]:
        """The counts collected so far, by metric name (`Succeeded`: 100), for the batch's
        summary line."""
        with self._lock:
            return {name: int(total) for (name, _), total in self._counts.items()}

    def emit_into(self, emit: Emit) -> None:
        with self._lock:
            counts, self._counts = self._counts, {}
            values, self._values = self._values, []
        for (name, unit), total in counts.items():
            emit(name, unit, total)
        for name, unit, value in values:
            emit(name, unit, value)


class MetricPublisher:
    """Collects metric values in memory and sends them to CloudWatch with PutMetricData.

    Values are kept as (value, count) per metric, so a percentile alarm on ScheduleLag sees the
    same distribution as from EMF. A failed send is logged and its values are dropped: metrics
    must never stop a worker, and the next interval carries on.
    """

    def __init__(self, client: CloudWatchClient, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._lock = threading.Lock()
        self._values: dict[tuple[str, MetricUnit], Counter[float]] = {}

    def add(self, name: str, unit: MetricUnit, value: float) -> None:
        with self._lock:
            self._values.setdefault((name, unit), Counter())[float(value)] += 1

    def flush(self) -> int:
        """Send what was collected since the last flush; returns how many data were sent."""
        with self._lock:
            collected, self._values = self._values, {}
        counts = {
            name: int(sum(value * times for value, times in values.items()))
            for (name, unit), values in collected.items()
            if unit == MetricUnit.Count
        }
        if counts:
            # The interval's one INFO line: what its runs did (each success is only at DEBUG).
            logger.info("runs counted since the last flush", extra=counts)
        data = list(_data(collected))
        for start in range(0, len(data), MAX_DATA_PER_REQUEST):
            try:
                self._client.put_metric_data(
                    Namespace=self._namespace,
                    MetricData=data[start : start + MAX_DATA_PER_REQUEST],
                )
            except (ClientError, BotoCoreError):
                logger.exception("metrics not published", data=len(data))
                return start
        return len(data)

    def run(
        self,
        stop: threading.Event,
        interval_sec: float = FLUSH_INTERVAL_SEC,
        sample: Callable[[], None] | None = None,
    ) -> None:
        """Flush every `interval_sec` until `stop` is set, then once more.

        `sample` is called before each flush: it adds what is a level rather than a count of
        events (the worker's busy slots), so the level goes out every interval even while
        nothing happens.
        """
        while not stop.wait(interval_sec):
            if sample is not None:
                sample()
            self.flush()
        if sample is not None:
            sample()
        self.flush()


def _data(collected: dict[tuple[str, MetricUnit], Counter[float]]) -> Iterator[MetricDatumTypeDef]:
    for (name, unit), counts in collected.items():
        pairs = sorted(counts.items())
        for start in range(0, len(pairs), MAX_VALUES_PER_DATUM):
            chunk = pairs[start : start + MAX_VALUES_PER_DATUM]
            yield {
                "MetricName": name,
                "Dimensions": [{"Name": "service", "Value": SERVICE}],
                "Unit": unit.value,
                "Values": [value for value, _ in chunk],
                "Counts": [float(count) for _, count in chunk],
            }
