"""The inputs of the capacity simulator: AWS's limits, takt's design knobs, and what one
execution costs in calls and capacity units (from the meter).

Every default is either AWS's published number (the limits) or takt's shipped setting (the
design), so a scenario run with defaults says what a fresh deployment in a default account does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

from takt_cli.capacity.billing import units_by_table
from takt_cli.capacity.cost import ONE_VCPU_MB


@dataclass(frozen=True)
class Limits:
    """AWS's limits and scaling rules, as published (us-east-1, a default account)."""

    partition_write_units_per_sec: float = 1000.0
    partition_read_units_per_sec: float = 3000.0
    # An on-demand table serves twice its previous peak at once; a new one 4,000 WCU/12,000 RCU.
    new_table_write_units_per_sec: float = 4000.0
    new_table_read_units_per_sec: float = 12000.0
    # The per-table quota on an on-demand table's throughput (a Service Quotas value).
    table_max_write_units_per_sec: float = 40000.0
    account_concurrency: int = 1000
    # Each function may add 1,000 concurrent instances every 10 seconds.
    function_scale_per_10_sec: int = 1000
    # An SQS event source mapping adds up to 300 concurrent invocations a minute, from 5.
    esm_scale_per_minute: int = 300
    esm_initial_concurrency: int = 5
    api_requests_per_sec: float = 10000.0
    cold_start_ms: float = 800.0


@dataclass(frozen=True)
class Design:
    """takt's knobs that the simulation varies (defaults: what ships today)."""

    due_shards: int = 64
    # cdk.json `openShards`: each execution enters and leaves the `open` index (two writes), so
    # 64 partitions take the seed's :00 burst.
    open_shards: int = 64
    dispatch_ahead_sec: float = 1.0
    # Send a message claimed ahead with SQS `DelaySeconds` up to its second, rather than have the
    # worker hold it (a proposal: it lets the horizon grow past a second without idle workers).
    delay_in_sqs: bool = False
    # Writes one claim keeps in flight at once, each phase's (cdk.json `claimerThreads`).
    claim_parallelism: int = 32
    # The SQS event source's maximum concurrency for the lane (cdk.json: default lane 333).
    lane_max_concurrency: int = 333
    # The default lane's batch (cdk.json `lanes.default.batchSize`; 10 before 2026-12-01).
    batch_size: int = 100
    # How many of a batch's messages a worker invocation runs at once
    # (`TAKT_WORKER_BATCH_CONCURRENCY`, takt.worker.batch); 1 before 2026-12-01, when a batch's
    # messages ran one after another.
    batch_concurrency: int = 100
    # Jobs spread over this many tenants; the jobs table's partition key is the tenant.
    tenants: int = 1000
    # One vCPU (infra/functions.py): a claim is CPU-bound.
    claimer_memory_mb: int = 1769
    worker_memory_mb: int = 1024
    # Fargate workers (`takt worker`, cdk.json `fargateWorker`) serving the lane instead of the
    # worker function: 0 tasks means the function. Tasks are there from the start (scaled ahead
    # of the due index, takt.dispatch.ahead); each runs `fargate_slots` calls at once and shares
    # `fargate_vcpu` between their CPU.
    fargate_tasks: int = 0
    fargate_slots: int = 200
    fargate_vcpu: float = 0.5
    fargate_memory_gb: float = 1.0

    @property
    def batch_waves(self) -> int:
        """How many rounds of calls a full batch takes: one when its messages run at once."""
        return -(-self.batch_size // max(1, self.batch_concurrency))


@dataclass(frozen=True)
class CallProfile:
    """One execution's calls and units, per function, and the latencies to price them in time.

    Defaults are what `takt bench local --stored 10000 --burst 1000` metered (docs/CAPACITY.md
    shows the run): a claim writes the execution, sends it (a tenth of a batch), advances the
    job and deletes the due item; a worker leases, completes and records the outcome on the job.
    `table_write_units_per_execution` is the executions table's own (the `open` index apart;
    the execution enters it and leaves it, the lease no longer touches it).
    """

    claimer_writes_per_item: float = 3.0
    claimer_cpu_ms_per_item: float = 7.7
    claimer_overhead_calls: float = 2.0
    worker_calls_per_message: float = 3.0
    worker_cpu_ms_per_message: float = 9.6
    due_write_units_per_item: float = 1.0
    jobs_write_units_per_execution: float = 2.0
    open_index_write_units_per_execution: float = 2.0
    table_write_units_per_execution: float = 3.2
    # Read units by table (`takt bench local --stored 0 --burst 20`, 2026-12-01: the claim's
    # and the lease check's reads of the job, the lease check's of the tenant's limits, the
    # claim's share of its due query).
    read_units_by_table: Mapping[str, float] = field(
        default_factory=lambda: {"jobs": 2.0, "tenants": 1.0, "due": 0.2}
    )
    dynamodb_latency_ms: float = 6.0
    sqs_latency_ms: float = 10.0
    target_latency_ms: float = 50.0
    # The spread of the call's time around `target_latency_ms` (its mean): a lognormal's sigma,
    # 0 for every call taking the mean (`JobDuration`).
    target_latency_sigma: float = 0.0
    # SQS to the event source mapping's receive, and its poll interval when the queue is busy.
    delivery_ms: float = 100.0

    @property
    def write_units_by_table(self) -> dict[str, float]:
        """The write units per execution by table and index, as `takt_cli.capacity.billing`
        names them."""
        return {
            "executions": self.table_write_units_per_execution,
            "executions/open": self.open_index_write_units_per_execution,
            "jobs": self.jobs_write_units_per_execution,
            "due": self.due_write_units_per_item,
        }

    @property
    def job(self) -> JobDuration:
        return JobDuration(self.target_latency_ms / 1000, self.target_latency_sigma)

    def claim_seconds(self, items: int, design: Design) -> tuple[float, float]:
        """(seconds until the claim's messages are sent, seconds until it ends) for `items`."""
        share = min(1.0, design.claimer_memory_mb / ONE_VCPU_MB)
        fixed = self.claimer_overhead_calls * self.dynamodb_latency_ms
        per_item = self.dynamodb_latency_ms / design.claim_parallelism
        cpu = items * self.claimer_cpu_ms_per_item / share
        sends = self.send_seconds(items, design) * 1000
        sent = fixed + items * per_item + sends + cpu / 2
        rest = items * per_item * (self.claimer_writes_per_item - 1) + cpu / 2
        return sent / 1000, (sent + rest) / 1000

    def send_seconds(self, items: int, design: Design) -> float:
        """How long a claim spends sending `items` messages (batches of ten)."""
        return -(-items // 10) * self.sqs_latency_ms / design.claim_parallelism / 1000

    def message_seconds(self, design: Design) -> float:
        """How long a worker spends on one message, from its lease to its completion."""
        ms = (
            self.worker_calls_per_message * self.dynamodb_latency_ms
            + self.target_latency_ms
            + self.worker_cpu_ms_per_message / self._worker_share(design)
        )
        return ms / 1000

    def message_cpu_seconds(self, design: Design) -> float:
        """The CPU one message takes in the worker: messages running at once share the
        invocation's vCPU share, so each starts this much after the one before it."""
        return self.worker_cpu_ms_per_message / self._worker_share(design) / 1000

    @staticmethod
    def _worker_share(design: Design) -> float:
        return min(1.0, design.worker_memory_mb / ONE_VCPU_MB)


def profile_from_report(report: Mapping[str, Any]) -> CallProfile:
    """The call profile a `takt bench local` report measured (its `metered_per_execution`)."""
    metered = report["metered_per_execution"]
    calls: Mapping[str, float] = metered["aws_calls_by_function"]
    units: Mapping[str, float] = metered["dynamodb_write_units"]
    invocations = metered["invocations"]

    def calls_of(function: str, operations: tuple[str, ...]) -> float:
        return sum(
            n
            for key, n in calls.items()
            if key.startswith(f"{function}: dynamodb.") and key.rsplit(".", 1)[1] in operations
        )

    def units_of(table: str, *, index: bool) -> float:
        total = 0.0
        for key, n in units.items():
            where = key.split(": ", 1)[1].split(" ", 1)[0]
            name, _, idx = where.partition("/")
            if table in name and bool(idx) == index:
                total += n
        return total

    def cpu_per_execution(function: str) -> float:
        inv = invocations.get(function)
        return float(inv["cpu_ms_per_invocation"] * inv["count"]) if inv else 0.0

    writes = ("PutItem", "UpdateItem", "DeleteItem")
    return replace(
        CallProfile(),
        claimer_writes_per_item=calls_of("claimer", writes),
        claimer_cpu_ms_per_item=cpu_per_execution("claimer"),
        worker_calls_per_message=calls_of("worker", (*writes, "GetItem", "Query")),
        worker_cpu_ms_per_message=cpu_per_execution("worker"),
        due_write_units_per_item=units_of("due", index=False),
        jobs_write_units_per_execution=units_of("jobs", index=False),
        open_index_write_units_per_execution=units_of("executions", index=True),
        table_write_units_per_execution=units_of("executions", index=False),
        read_units_by_table=units_by_table(metered["dynamodb_read_units"]),
    )


@dataclass(frozen=True)
class JobDuration:
    """How long a job's call takes: `mean_sec` always, and with `sigma` > 0 a lognormal spread
    of that mean (sigma is the log's standard deviation: 1.0 puts the p99 at about 5 times the
    mean, the long tail of calls that mostly answer fast and sometimes hang).

    Written `lognormal:MEAN:SIGMA` or `fixed:MEAN` on the command line (`parse`).
    """

    mean_sec: float
    sigma: float = 0.0

    @classmethod
    def parse(cls, text: str) -> JobDuration:
        kind, _, rest = text.partition(":")
        parts = rest.split(":") if rest else []
        try:
            numbers = [float(part) for part in parts]
        except ValueError:
            raise ValueError(f"not a number in {text!r}") from None
        if kind == "fixed" and len(numbers) == 1 and numbers[0] > 0:
            return cls(numbers[0])
        if kind == "lognormal" and len(numbers) == 2 and numbers[0] > 0 and numbers[1] >= 0:
            return cls(numbers[0], numbers[1])
        raise ValueError(f"expected fixed:MEAN or lognormal:MEAN:SIGMA, not {text!r}")

    def quantile(self, q: float) -> float:
        """The duration `q` of the calls stay under (0 < q < 1)."""
        if self.sigma <= 0:
            return self.mean_sec
        mu = math.log(self.mean_sec) - self.sigma**2 / 2
        return math.exp(mu + self.sigma * NormalDist().inv_cdf(q))

    def expected_max(self, n: int) -> float:
        """About how long the slowest of `n` calls takes (the n/(n+1) quantile): a worker
        invocation running a batch of `n` at once lasts that long and is billed for it."""
        return self.quantile(n / (n + 1)) if n > 1 else self.mean_sec

    def groups(self, count: int = 10) -> list[tuple[float, float]]:
        """(duration, share) for `count` equal shares of the calls, each at its midpoint
        quantile, scaled so their mean is the mean: cohorts of runs that end apart."""
        if self.sigma <= 0:
            return [(self.mean_sec, 1.0)]
        points = [self.quantile((i + 0.5) / count) for i in range(count)]
        scale = self.mean_sec / (sum(points) / count)
        return [(point * scale, 1 / count) for point in points]

    def describe(self) -> str:
        if self.sigma <= 0:
            return f"fixed:{self.mean_sec:g}"
        return (
            f"lognormal:{self.mean_sec:g}:{self.sigma:g} "
            f"(p50 {self.quantile(0.5):.1f} s, p99 {self.quantile(0.99):.1f} s)"
        )
