"""Cost per million executions, from what the meter measured per execution.

The meter counts requests and capacity units exactly as a local run makes them; what it cannot
see locally is how long a Lambda invocation would be billed for. `CloudModel` prices that from
the measured parts: the handler's own CPU time (scaled to the vCPU share the function's memory
buys: 1,769 MB is one vCPU), one network round trip per AWS call it made, the target's latency,
and the time the worker holds a message claimed ahead of its second. Every assumption is a
field, printed with the report.

Fixed costs (the scheduler's and watchdog's minute-long loops, the event source mapping's idle
polls) do not grow with executions: `fixed_cost_per_hour` prices them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from takt_cli.capacity.prices import US_EAST_1, Prices
from takt_cli.metering import OUTSIDE, Usage

# What each function is configured with in `infra/functions.py` (a test keeps the two equal).
FUNCTION_MEMORY_MB: Mapping[str, int] = {
    "api": 512,
    "scheduler": 256,
    "claimer": 1769,
    "worker": 1024,
    "watchdog": 256,
    "indexer": 256,
}
ONE_VCPU_MB = 1769
GB = 1e9
DAYS_PER_MONTH = 30.4
# START, END and REPORT lines (with an X-Ray trace id), and one EMF metrics document.
PLATFORM_LOG_BYTES_PER_INVOCATION = 330
EMF_LOG_BYTES_PER_INVOCATION = 600


@dataclass(frozen=True)
class CloudModel:
    """How long an invocation measured locally would run in Lambda."""

    aws_call_latency_ms: float = 6.0
    target_latency_ms: float = 50.0
    # A message claimed up to `dispatch_ahead_sec` early is held by the worker until its second;
    # half the horizon less the trip through the claimer, SQS and the event source mapping.
    hold_ms_per_worker_invocation: float = 250.0
    xray_sampled_fraction: float = 0.05
    # A worker invocation runs this many of its batch's messages at once (takt.worker.batch), so
    # it waits on its targets once per round of them rather than once per message.
    batch_concurrency: int = 100

    def billed_ms(
        self, function: str, cpu_ms: float, aws_calls: float, messages: float, memory_mb: int
    ) -> float:
        """Billed duration of one invocation (Lambda bills by the millisecond, waiting
        included)."""
        cpu_share = min(1.0, memory_mb / ONE_VCPU_MB)
        ms = cpu_ms / cpu_share + aws_calls * self.aws_call_latency_ms
        if function == "worker":
            waves = max(1.0, messages / max(1, self.batch_concurrency))
            ms += waves * self.target_latency_ms + self.hold_ms_per_worker_invocation
        return ms


@dataclass(frozen=True)
class FunctionProfile:
    """One function's part in an execution: how many invocations, and each one's work."""

    name: str
    invocations: float
    cpu_ms: float
    aws_calls: float
    messages: float = 0.0

    @property
    def memory_mb(self) -> int:
        return FUNCTION_MEMORY_MB.get(self.name, 512)


@dataclass(frozen=True)
class ExecutionProfile:
    """What one execution costs in requests, as the meter measured it (all per execution)."""

    write_units: Mapping[str, float]
    read_units: float
    sqs_requests: float
    functions: tuple[FunctionProfile, ...]
    log_bytes: float
    history_item_bytes: float
    api_requests: float = 0.0

    @property
    def total_write_units(self) -> float:
        return sum(self.write_units.values())


@dataclass(frozen=True)
class CostLine:
    component: str
    usd_per_million: float
    detail: str = ""


@dataclass(frozen=True)
class CostReport:
    lines: tuple[CostLine, ...]
    model: CloudModel = field(default_factory=CloudModel)

    @property
    def total(self) -> float:
        return sum(line.usd_per_million for line in self.lines)

    def to_dict(self) -> dict[str, object]:
        return {
            "usd_per_million_executions": round(self.total, 3),
            "breakdown": {
                line.component: {"usd": round(line.usd_per_million, 4), "detail": line.detail}
                for line in self.lines
            },
        }


def cost_per_million(
    profile: ExecutionProfile,
    *,
    prices: Prices = US_EAST_1,
    model: CloudModel | None = None,
    retention_days: float = 7.0,
) -> CostReport:
    """Price one million executions of `profile`, with the history kept `retention_days`."""
    model = model or CloudModel()
    lines = [
        CostLine(
            f"DynamoDB writes: {label}",
            units * prices.dynamodb_write_unit_per_million,
            f"{units:.2f} write units",
        )
        for label, units in sorted(profile.write_units.items(), key=lambda kv: -kv[1])
        if units > 0
    ]
    lines.append(
        CostLine(
            "DynamoDB reads",
            profile.read_units * prices.dynamodb_read_unit_per_million,
            f"{profile.read_units:.2f} read units",
        )
    )
    lines.append(
        CostLine(
            "SQS requests",
            profile.sqs_requests * prices.sqs_request_per_million,
            f"{profile.sqs_requests:.3f} requests (64 KB chunks)",
        )
    )
    invocations = 0.0
    for fn in profile.functions:
        billed = model.billed_ms(fn.name, fn.cpu_ms, fn.aws_calls, fn.messages, fn.memory_mb)
        gb_seconds = fn.invocations * billed / 1000 * fn.memory_mb / 1024
        invocations += fn.invocations
        lines.append(
            CostLine(
                f"Lambda {fn.name}",
                fn.invocations * prices.lambda_request_per_million
                + gb_seconds * prices.lambda_gb_second * 1e6,
                f"{fn.invocations:.3f} invocations of {billed:.0f} ms at {fn.memory_mb} MB",
            )
        )
    if profile.api_requests:
        lines.append(
            CostLine(
                "API Gateway (HTTP API)",
                profile.api_requests * prices.api_gateway_http_per_million,
                f"{profile.api_requests:.2f} requests",
            )
        )
    log_bytes = profile.log_bytes + invocations * (
        PLATFORM_LOG_BYTES_PER_INVOCATION + EMF_LOG_BYTES_PER_INVOCATION
    )
    lines.append(
        CostLine(
            "CloudWatch Logs ingestion",
            log_bytes * 1e6 / GB * prices.logs_ingested_per_gb,
            f"{log_bytes:.0f} bytes",
        )
    )
    lines.append(
        CostLine(
            "X-Ray traces",
            invocations * model.xray_sampled_fraction * prices.xray_trace_per_million,
            f"{model.xray_sampled_fraction:.0%} of invocations sampled",
        )
    )
    gb_months = profile.history_item_bytes * 1e6 / GB * retention_days / DAYS_PER_MONTH
    lines.append(
        CostLine(
            "DynamoDB storage (history)",
            gb_months * prices.dynamodb_storage_gb_month,
            f"{profile.history_item_bytes:.0f} bytes per execution for {retention_days:g} days",
        )
    )
    return CostReport(tuple(lines), model)


def worker_wait_usd_per_million(
    job_seconds: float,
    *,
    batch_size: int = 100,
    batch_concurrency: int = 100,
    memory_mb: int = FUNCTION_MEMORY_MB["worker"],
    metered_latency_ms: float = CloudModel.target_latency_ms,
    prices: Prices = US_EAST_1,
) -> float:
    """What a million executions add in worker Lambda duration when each call takes
    `job_seconds` rather than the `metered_latency_ms` the metered cost assumed: Lambda bills
    the wait. Full batches of `batch_size`, run `batch_concurrency` at a time."""
    waves = -(-batch_size // max(1, batch_concurrency))
    extra_sec = max(0.0, job_seconds - metered_latency_ms / 1000) * waves
    invocations = 1e6 / batch_size
    return invocations * extra_sec * memory_mb / 1024 * prices.lambda_gb_second


# A Lambda that only calls an endpoint and waits: the smallest size.
CALLER_LAMBDA_MB = 128


# What `takt bench local --stored 10000 --burst 1000` metered per recurring execution, component
# by component (docs/CAPACITY.md, "Cost per million executions": the 2026-11-30 table, with the
# claimer and worker priced at their shipped sizes by the late run), with a 50 ms target. The
# all-in cost starts from these when no profile report is given; its DynamoDB lines come from
# the call profile's units instead (`default_components`), which are measured apart, and its
# claimer line from the claims the scenario's rate makes (`CallProfile.claimer_usd_per_million`).
DEFAULT_METERED: Mapping[str, float] = {
    "DynamoDB storage (history)": 0.05,
    "SQS requests": 0.14,
    "Lambda worker": 0.79,
    "CloudWatch Logs ingestion": 0.37,
    "X-Ray traces": 0.03,
}
DYNAMODB_THROUGHPUT = ("DynamoDB writes", "DynamoDB reads")


def default_components(
    write_units: float, read_units: float, prices: Prices = US_EAST_1
) -> dict[str, float]:
    """`DEFAULT_METERED` with DynamoDB's writes and reads priced on demand from the units an
    execution writes and reads with a target that answers at once (the call profile's)."""
    return {
        "DynamoDB writes": write_units * prices.dynamodb_write_unit_per_million,
        "DynamoDB reads": read_units * prices.dynamodb_read_unit_per_million,
        **DEFAULT_METERED,
    }


def metered_components(breakdown: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """A `takt bench local` report's cost breakdown with its write lines summed into one
    ("DynamoDB writes")."""
    out: dict[str, float] = {}
    for component, line in breakdown.items():
        name = component.split(":", 1)[0]
        out[name] = out.get(name, 0.0) + float(line["usd"])
    return out


@dataclass(frozen=True)
class LogsAndMetrics:
    """What CloudWatch charges for takt's logs and metrics per execution.

    Logs (`takt.worker.metrics`): a run that went as planned is logged at DEBUG, which only the
    sampled share of invocations (Powertools' sample rate, 1 %, decided per invocation; on
    Fargate per task) keeps, with the run's "execution received" line; the worker function logs
    one INFO line a batch counting its runs ("batch processed"), `takt worker` one a minute a
    task ("runs counted since the last flush"); failures keep a WARNING line each, which a
    steady hour of successes does not have. Each Lambda invocation adds the platform's lines and
    one EMF document (the worker's metrics are aggregated per invocation: the counts summed,
    each run's start lag a value; the claimer logs per claim, not per item). Ingested at
    $0.50/GB and stored for the log groups' month. The line and document sizes are measured
    with a CDK-named function's keys (tests/integration/worker/test_worker_logs.py holds them to
    a real batch). Metrics: EMF costs nothing per value beyond its bytes; `takt worker` sends
    PutMetricData once a minute per task. Custom metrics themselves (a dozen names, one
    dimension) are a fixed few dollars a month, not per execution.
    """

    debug_sample_rate: float = 0.01
    # A sampled run's two DEBUG lines ("execution received", "execution processed") with
    # Powertools' Lambda keys.
    debug_bytes_per_execution: float = 1180.0
    # The worker function's "batch processed" line with a CDK-named function's Lambda keys.
    bytes_per_summary_line: float = 475.0
    # The worker's EMF document: its fixed part, and each run's start lag value.
    emf_bytes_fixed: float = 255.0
    bytes_per_metric_value: float = 8.0
    # `takt worker`'s "runs counted since the last flush" line (no Lambda keys), once a minute.
    bytes_per_task_minute_line: float = 175.0
    retention_months: float = 1.0

    def emf_bytes(self, runs: int) -> float:
        """The worker's EMF document for an invocation of `runs` runs."""
        return self.emf_bytes_fixed + runs * self.bytes_per_metric_value

    def lambda_usd_per_million(
        self, batch_size: int, other_invocations_per_execution: float, prices: Prices = US_EAST_1
    ) -> tuple[float, str]:
        """Worker invocations of `batch_size` runs each, and the claimer's (and any other
        function's) invocations per execution, each with its platform lines and EMF."""
        sampled = self.debug_sample_rate * self.debug_bytes_per_execution
        batch = (
            PLATFORM_LOG_BYTES_PER_INVOCATION
            + self.bytes_per_summary_line
            + self.emf_bytes(batch_size)
        ) / batch_size
        others = other_invocations_per_execution * (
            PLATFORM_LOG_BYTES_PER_INVOCATION + EMF_LOG_BYTES_PER_INVOCATION
        )
        per_execution = sampled + batch + others
        usd = per_execution * 1e6 / GB * self._per_gb(prices)
        detail = (
            f"{per_execution:.0f} bytes: {sampled:.1f} of sampled DEBUG lines, {batch:.1f} of the "
            f"worker's batch of {batch_size} (its INFO line, EMF, platform lines), "
            f"{others:.1f} of other invocations"
        )
        return usd, detail

    def fargate_usd_per_million(
        self, task_hours_per_million: float, prices: Prices = US_EAST_1
    ) -> tuple[float, str]:
        task_minutes = task_hours_per_million * 60
        per_execution = (
            self.debug_sample_rate * self.debug_bytes_per_execution
            + task_minutes * self.bytes_per_task_minute_line / 1e6
        )
        logs = per_execution * 1e6 / GB * self._per_gb(prices)
        puts = task_minutes * prices.cloudwatch_put_metric_data_per_million / 1e6
        detail = (
            f"{per_execution:.0f} bytes of sampled DEBUG lines and a line a task-minute; "
            f"PutMetricData once a minute a task (${puts:.3f})"
        )
        return logs + puts, detail

    def _per_gb(self, prices: Prices) -> float:
        return prices.logs_ingested_per_gb + prices.logs_stored_per_gb_month * self.retention_months


def fargate_task_hour_usd(vcpu: float, memory_gb: float, prices: Prices = US_EAST_1) -> float:
    return vcpu * prices.fargate_vcpu_hour + memory_gb * prices.fargate_gb_hour


def alternatives(
    prices: Prices = US_EAST_1, job_seconds: float = 0.05
) -> dict[str, dict[str, object]]:
    """The same million executions on AWS's managed schedulers, as the seed compares them; the
    call itself takes `job_seconds`."""
    transition = prices.step_functions_per_thousand_transitions * 1000
    caller = (
        prices.lambda_request_per_million
        + job_seconds * CALLER_LAMBDA_MB / 1024 * prices.lambda_gb_second * 1e6
    )
    return {
        "EventBridge Scheduler": {
            "usd_per_million": prices.eventbridge_scheduler_per_million,
            "notes": (
                "one invocation per occurrence; 60 s precision; no execution history; "
                "the target's own cost (a Lambda calling the endpoint) comes on top"
            ),
        },
        "EventBridge Scheduler + a Lambda target making the call": {
            "usd_per_million": round(prices.eventbridge_scheduler_per_million + caller, 2),
            "notes": (
                f"the Lambda ({CALLER_LAMBDA_MB} MB, arm64) waits {job_seconds:g} s on the "
                "endpoint and is billed for it; 60 s precision; no history beyond logs"
            ),
        },
        "Step Functions Express started by EventBridge Scheduler, calling the target": {
            "usd_per_million": round(
                prices.eventbridge_scheduler_per_million
                + prices.step_functions_express_per_million
                + max(0.1, job_seconds) * 0.0625 * prices.step_functions_express_gb_second * 1e6,
                2,
            ),
            "notes": (
                f"Express bills its {job_seconds:g} s wait in 64 MB GB-seconds; at most 5 minutes "
                "a run; 60 s precision (the Scheduler); history only in CloudWatch Logs"
            ),
        },
        "Step Functions Standard (Wait state)": {
            "usd_per_million": 2 * transition,
            "notes": (
                "2 transitions per one-off execution (Wait, then the Task that calls the "
                "target); a recurring job loops Wait -> Task -> Choice, 3 transitions "
                f"(${3 * transition:.0f}/M); history kept 90 days; the target's cost on top"
            ),
        },
    }


WATCH_CHECK = "watch-check"
"""The watchdog's check of the claims' watch lists (takt.store.watches), metered apart: it reads
every execution a claim listed and deletes the list, work that grows with executions."""
WATCH_CHECK_OPERATIONS = frozenset({"BatchGetItem", "DeleteItem"})
"""The watchdog's calls that only the watch check makes (`Usage.relabelled` moves them)."""
PER_EXECUTION_FUNCTIONS = ("claimer", "worker", OUTSIDE, WATCH_CHECK)
"""Functions whose work grows with executions. The scheduler's and watchdog's loops, the empty
claims (probes) and the idle polls cost the same whether anything runs, so they are fixed."""


def profile_from_usage(
    run: Usage,
    executions: int,
    *,
    log_bytes: float,
    history_item_bytes: float,
    created: Usage | None = None,
    jobs_created: int = 0,
) -> ExecutionProfile:
    """The per-execution profile of a metered run; with `created`, each execution also pays
    for creating its (one-off) job through the API."""
    n = max(1, executions)
    per_run = run.only(PER_EXECUTION_FUNCTIONS)
    writes: dict[str, float] = {}
    for (function, table, index, operation), units in per_run.write_units.items():
        label = f"{_short(table)}{'/' + index if index else ''} {operation} ({function})"
        writes[label] = writes.get(label, 0.0) + units / n
    read_units = per_run.total_read_units() / n
    sqs = per_run.total_sqs_requests(include_empty_receives=False) / n
    functions = []
    worker_calls = per_run.invocations.get("worker")
    for name in ("claimer", "worker"):
        inv = per_run.invocations.get(name)
        if inv is None or not inv.count:
            continue
        calls = sum(c for (fn, _, _), c in per_run.calls.items() if fn == name)
        functions.append(
            FunctionProfile(
                name=name,
                invocations=inv.count / n,
                cpu_ms=inv.cpu_sec * 1000 / inv.count,
                aws_calls=calls / inv.count,
                messages=executions / worker_calls.count
                if worker_calls and name == "worker"
                else 0,
            )
        )
    api_requests = 0.0
    if created is not None and jobs_created:
        per_job = created.only(("api",))
        share = 1 / jobs_created
        for (_, table, index, operation), units in per_job.write_units.items():
            label = f"{_short(table)}{'/' + index if index else ''} {operation} (api)"
            writes[label] = writes.get(label, 0.0) + units * share
        read_units += per_job.total_read_units() * share
        inv = per_job.invocations.get("api")
        if inv is not None and inv.count:
            calls = sum(c for (fn, _, _), c in per_job.calls.items() if fn == "api")
            functions.append(
                FunctionProfile(
                    name="api",
                    invocations=inv.count * share,
                    cpu_ms=inv.cpu_sec * 1000 / inv.count,
                    aws_calls=calls / inv.count,
                )
            )
            api_requests = inv.count * share
    return ExecutionProfile(
        write_units=writes,
        read_units=read_units,
        sqs_requests=sqs,
        functions=tuple(functions),
        log_bytes=log_bytes,
        history_item_bytes=history_item_bytes,
        api_requests=api_requests,
    )


def _short(table: str) -> str:
    """`takt-executions` and `executions-1a2b3c4d` both read as `executions`."""
    for kind in ("executions", "jobs", "due", "idempotency"):
        if kind in table:
            return kind
    return table
