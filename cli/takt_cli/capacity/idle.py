"""The estimated fixed monthly cost of an idle takt deployment, from its synthesized templates.

Idle means no jobs: what a deployment costs by merely running. The scheduler's drivers and the
watchdog loop all the time, so their compute and the DynamoDB reads of their polling are the bulk
of it;
then come alarms, the dashboard and the KMS key, and the Fargate worker when it is on. No custom
metric costs anything while idle: the loops publish none of their counts when they are zero
(`takt.observability.add_counts`). The reads
are not estimated by hand: the library's own ticker and watchdog are driven through idle minutes
against a DynamoDB stand-in that bills each call as DynamoDB does, so a change to how they poll
changes the estimate. Everything else is read from the templates.

`takt cost idle [cdk.out]` (or `python -m infra.cost [cdk.out]`, the CDK app's entry point to it)
prints the tables after `make synth`; docs/DEPLOY.md shows them, and a test keeps the two equal.
Prices are us-east-1 list prices without free tiers, from the tooling's one table
(`takt_cli.capacity.prices`). It reads the CDK app's driver and function constants (`infra/`),
so it runs from the repository, as `takt deploy check` does.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from infra.driver import DRIVER_LIFE_SEC, DRIVERS, HANDOVER_SEC
from infra.functions import SCHEDULER
from takt.aws import make_clients
from takt.clock import SystemClock
from takt.config import Settings
from takt.dispatch.driver import STOP_BEFORE_END_SEC, Driver
from takt.dispatch.rest import Rest
from takt.store.watches import watch_partitions
from takt.wiring import Services
from takt.worker.process import IDLE_WAIT_SEC
from takt_cli.capacity.model import WATCHDOG_SWEEPS, watchdog_busy_sec
from takt_cli.capacity.prices import LIST_PRICES, amount_text

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Template = Mapping[str, Any]

HOURS_PER_MONTH = 730
MINUTES_PER_MONTH = HOURS_PER_MONTH * 60

# A resting driver's invocation (`driverRest`): one claim, one sweep of the index's empty
# partitions, the rest written and both looks at the index, with the invocation around it (an
# estimate, as takt_cli.capacity.model.ONE_SWEEP_SEC).
RESTING_DRIVER_SEC = 1
# START, END and REPORT lines and one EMF document of a loop invocation (an estimate).
LOG_BYTES_PER_LOOP_INVOCATION = 1500
# An idle SQS event source mapping long-polls with about five pollers, each call waiting 20 s.
ESM_RECEIVES_PER_MINUTE = 15
# Container Insights' metrics for one service: about a dozen each at the cluster, service and
# task-definition-family level (an estimate; they are billed as custom metrics).
CONTAINER_INSIGHTS_METRICS = 35
# Bytes through the NAT gateway per idle receive, request and answer (an estimate).
BYTES_PER_RECEIVE = 1200
# The due-shard counts the what-if table shows.
SHARD_COUNTS = (16, 32, 64, 128)
# The Fargate worker's resources carry this in their logical ids; so do its alarms.
FARGATE_MARK = "FargateWorker"


# The list prices this estimate uses (`takt_cli.capacity.prices`), in the order its table of
# prices shows them.
PRICES = {
    name: LIST_PRICES[name]
    for name in (
        "lambda_gb_second",
        "lambda_request_per_million",
        "dynamodb_read_unit_per_million",
        "dynamodb_write_unit_per_million",
        "dynamodb_write_capacity_unit_hour",
        "dynamodb_read_capacity_unit_hour",
        "cloudwatch_alarm_metric_month",
        "cloudwatch_dashboard_month",
        "cloudwatch_custom_metric_month",
        "logs_ingested_per_gb",
        "kms_key_month",
        "xray_trace_per_million",
        "sqs_request_per_million",
        "fargate_vcpu_hour",
        "fargate_gb_hour",
        "nat_gateway_hour",
        "nat_gateway_per_gb",
        "public_ipv4_hour",
    )
}


@dataclass(frozen=True)
class CostLine:
    item: str
    arithmetic: str
    usd: float


@dataclass(frozen=True)
class IdleUnits:
    """DynamoDB request units per idle minute."""

    scheduler_reads: float
    scheduler_writes: float
    watchdog_reads: float


class _IdleTables:
    """A DynamoDB client for tables that hold nothing due and nothing open.

    Each call is billed as DynamoDB bills it: a read of up to 4 KB costs one read unit when
    strongly consistent and half of one otherwise, even when it finds nothing; a small write
    costs one write unit, even when its condition fails. The only item an idle deployment
    writes is the drivers' meta item (watermark, claimed second), each attribute only forward.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._meta: dict[str, Any] = {}
        self.read_units = 0.0
        self.write_units = 0.0

    def _read(self, request: Mapping[str, Any]) -> None:
        with self._lock:
            self.read_units += 1.0 if request.get("ConsistentRead") else 0.5

    def query(self, **request: Any) -> dict[str, Any]:
        self._read(request)
        return {"Count": 0, "Items": []}

    def get_item(self, **request: Any) -> dict[str, Any]:
        self._read(request)
        with self._lock:
            return {"Item": dict(self._meta)} if self._meta else {}

    def batch_get_item(self, **request: Any) -> dict[str, Any]:
        """The minutes' counts (`DueStore.splits`): none written, each key billed as a read."""
        for table in request["RequestItems"].values():
            for _ in table["Keys"]:
                self._read(table)
        return {"Responses": {}}

    def update_item(self, **request: Any) -> dict[str, Any]:
        """`SET #a = :v` if the attribute is absent or below `:v` (`DueStore._advance`)."""
        (name,) = request["ExpressionAttributeNames"].values()
        value = request["ExpressionAttributeValues"][":v"]
        with self._lock:
            self.write_units += 1.0
            old = self._meta.get(name)
            if old is not None and _ordered(old) >= _ordered(value):
                raise ClientError(
                    {"Error": {"Code": "ConditionalCheckFailedException", "Message": ""}},
                    "UpdateItem",
                )
            self._meta[name] = value
            return {"Attributes": dict(self._meta)}


def _ordered(value: Mapping[str, str]) -> str:
    """A DynamoDB attribute value as the condition `<` compares it (the numbers written here are
    whole seconds, so padding them orders them as numbers)."""
    return value["N"].zfill(20) if "N" in value else value["S"]


def idle_units(
    due_shards: int,
    open_shards: int,
    drivers: int = DRIVERS,
    sweeps: int = WATCHDOG_SWEEPS,
    *,
    rest: bool = False,
    due_cursor: bool = False,
) -> IdleUnits:
    """Drive the real drivers and watchdog through an idle minute and count what it costs.

    `DRIVERS` drivers step on every second, as the scheduler's invocations do, from the steady
    state of an idle deployment: the watermark three minutes back, where the previous minute left
    it, and one driver leading. With `rest` (`driverRest`), the minute's one driver steps once
    and rests, as `takt.dispatch.rest` lets it. The watchdog's invocation is its `sweeps` sweeps.
    With `due_cursor` (`dueCursor`) the probes read as the claim cursor has them (two queries).
    """
    tables = _IdleTables()
    # `model_construct` rather than the constructor, which would also read this shell's TAKT_*
    # variables: the deployed functions see Settings' defaults and the template's values only.
    settings = Settings.model_construct(
        due_shards=due_shards,
        open_shards=open_shards,
        claimer_mode="lambda",
        claimer_function="claimer",
        region="us-east-1",
        due_cursor=due_cursor,
    )
    # Real clients for everything else: an idle minute never calls them, and building them
    # keeps this in step with whatever clients the services take.
    clients = replace(make_clients(settings), dynamodb=cast("DynamoDBClient", tables))
    services = Services(settings=settings, clients=clients, clock=SystemClock())
    start = datetime(2030, 1, 1, tzinfo=UTC)
    services.due.advance_watermark(start - timedelta(minutes=3))
    running = [Driver(services.due, services.ticker, services.clock) for _ in range(drivers)]
    running[0].leading = True
    reads, writes = tables.read_units, tables.write_units
    if rest:
        tick = running[0].step(start)
        resting = Rest(services.due, settings.max_catchup_buckets)
        if tick is None or not resting.settles(start, tick.watermark):
            raise RuntimeError("an idle driver with rest on did not rest after its first tick")
    else:
        for second in range(60):
            for driver in running:
                driver.step(start + timedelta(seconds=second))
    # Each minute's new driver claims its start.
    services.due.claim_start(start)
    scheduler_reads, scheduler_writes = tables.read_units - reads, tables.write_units - writes
    reads = tables.read_units
    for sweep in range(sweeps):
        services.watchdog.sweep(start + timedelta(seconds=sweep * settings.watchdog_interval_sec))
    return IdleUnits(
        scheduler_reads=scheduler_reads,
        scheduler_writes=scheduler_writes,
        watchdog_reads=tables.read_units - reads,
    )


def _resources(template: Template, resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template.get("Resources", {}).items()
        if resource["Type"] == resource_type
    }


def _function(template: Template, name: str) -> dict[str, Any]:
    """The properties of the function built as `Functions/<Name>` (logical id plus a hash)."""
    pattern = re.compile(f"^Functions{name.capitalize()}[0-9A-F]{{8}}$")
    (properties,) = [
        resource["Properties"]
        for logical_id, resource in _resources(template, "AWS::Lambda::Function").items()
        if pattern.match(logical_id)
    ]
    return cast(dict[str, Any], properties)


def _variable(function: Mapping[str, Any], name: str) -> str:
    return str(function["Environment"]["Variables"][name])


def _alarm_metrics(alarm: Mapping[str, Any]) -> int:
    """How many metrics an alarm reads: CloudWatch bills a metric-math alarm per metric."""
    queries = alarm["Properties"].get("Metrics")
    return sum(1 for query in queries if "MetricStat" in query) if queries else 1


def _usd(amount: float) -> str:
    return f"{amount:,.2f}"


def _loop_compute(name: str, memory_mb: int, seconds: float) -> CostLine:
    gb_s = memory_mb / 1024 * seconds * MINUTES_PER_MONTH
    price = PRICES["lambda_gb_second"]
    return CostLine(
        f"{name} function, {memory_mb} MB, ~{seconds:g} s of every minute",
        f"{memory_mb / 1024:g} GB x {seconds:g} s x {MINUTES_PER_MONTH:,} min "
        f"= {gb_s:,.0f} GB-s x {price}",
        gb_s * price.usd,
    )


def _reads(item: str, units_per_minute: float) -> CostLine:
    monthly = units_per_minute * MINUTES_PER_MONTH
    price = PRICES["dynamodb_read_unit_per_million"]
    return CostLine(
        item,
        f"{units_per_minute:,g} RRU/min x {MINUTES_PER_MONTH:,} min "
        f"= {monthly / 1e6:,.1f} M x {price}",
        monthly * price.usd,
    )


def _count(item: str, count: float, what: str, price_key: str) -> CostLine:
    """`count` of the price's listed unit (millions for a per-million price), as in
    "25 metrics read x $0.10" or "10.51 M (...) x $0.40/M"."""
    price = PRICES[price_key]
    return CostLine(item, f"{count:,.4g}{what} x {price}", count * price.listed)


def _watchdog_sweeps(stateless: Template) -> int:
    """The sweeps per invocation the watchdog's rule asks for (its target's input)."""
    (rule,) = [
        resource["Properties"]
        for logical_id, resource in _resources(stateless, "AWS::Events::Rule").items()
        if logical_id.startswith("TriggersWatchdogEveryMinute")
    ]
    (target,) = rule["Targets"]
    return int(json.loads(target["Input"])["sweeps"])


def base_lines(stateful: Template, stateless: Template) -> list[CostLine]:
    """What every deployment pays while idle (the Fargate worker's part excluded)."""
    scheduler = _function(stateless, "scheduler")
    watchdog = _function(stateless, "watchdog")
    due_shards = int(_variable(scheduler, "TAKT_DUE_SHARDS"))
    open_shards = int(_variable(watchdog, "TAKT_OPEN_SHARDS"))
    interval = float(_variable(watchdog, "TAKT_WATCHDOG_INTERVAL_SEC"))
    # A driver lives its function's timeout less the margin it stops before it (infra/driver.py),
    # unless it rests (`driverRest`, takt.dispatch.rest): then it ends after its first tick.
    driver_life = int(scheduler["Timeout"]) - STOP_BEFORE_END_SEC
    drivers = (driver_life - HANDOVER_SEC) // 60
    rest = scheduler["Environment"]["Variables"].get("TAKT_DRIVER_REST") == "true"
    cursor = scheduler["Environment"]["Variables"].get("TAKT_DUE_CURSOR", "").lower() == "true"
    sweeps = _watchdog_sweeps(stateless)
    units = idle_units(due_shards, open_shards, drivers, sweeps, rest=rest, due_cursor=cursor)
    traced = scheduler.get("TracingConfig", {}).get("Mode") == "Active"
    loops = 2 * MINUTES_PER_MONTH
    alarms = [
        alarm
        for template in (stateful, stateless)
        for logical_id, alarm in _resources(template, "AWS::CloudWatch::Alarm").items()
        if FARGATE_MARK not in logical_id
    ]
    log_gb = loops * LOG_BYTES_PER_LOOP_INVOCATION / 1e9
    # The lanes' mappings poll SQS; a DynamoDB stream's (the indexer's) reads are not billed.
    mappings = sum(
        1
        for mapping in _resources(stateless, "AWS::Lambda::EventSourceMapping").values()
        if "StartingPosition" not in mapping["Properties"]
    )
    receives = mappings * ESM_RECEIVES_PER_MINUTE * MINUTES_PER_MONTH
    requests = [
        _reads(f"scheduler's probes of the due index (N = {due_shards})", units.scheduler_reads),
        _reads(
            f"watchdog's sweeps of the open index ({open_shards} shards) and the watch lists "
            f"({watch_partitions(due_shards)} partitions)",
            units.watchdog_reads,
        ),
        _count(
            "drivers' claims of each second and start, watermark writes",
            units.scheduler_writes * MINUTES_PER_MONTH / 1e6,
            f" M ({units.scheduler_writes:g} WRU/min)",
            "dynamodb_write_unit_per_million",
        ),
    ]
    if table_capacity_lines(stateful):
        # Provisioned tables serve the loops out of their minimum capacity (priced apart:
        # `table_capacity_lines`), which the seed profile sizes for them.
        per_minute = (
            f"{units.scheduler_reads:,g} read units/min",
            f"{units.watchdog_reads:,g} read units/min",
            f"{units.scheduler_writes:g} write units/min",
        )
        requests = [
            CostLine(line.item, f"{units}, within the tables' provisioned minimum (below)", 0.0)
            for line, units in zip(requests, per_minute, strict=True)
        ]
    return [
        _loop_compute(
            "scheduler",
            int(scheduler["MemorySize"]),
            RESTING_DRIVER_SEC if rest else driver_life,
        ),
        _loop_compute(
            "watchdog",
            int(watchdog["MemorySize"]),
            watchdog_busy_sec(sweeps, interval),
        ),
        _count(
            "scheduler and watchdog invocations",
            loops / 1e6,
            f" M (2 x {MINUTES_PER_MONTH:,})",
            "lambda_request_per_million",
        ),
        *requests,
        _count(
            f"CloudWatch alarms ({len(alarms)})",
            sum(_alarm_metrics(alarm) for alarm in alarms),
            " metrics read",
            "cloudwatch_alarm_metric_month",
        ),
        _count(
            "CloudWatch dashboard",
            len(_resources(stateless, "AWS::CloudWatch::Dashboard")),
            "",
            "cloudwatch_dashboard_month",
        ),
        _count(
            "KMS key of the alarm topic",
            len(_resources(stateful, "AWS::KMS::Key")),
            "",
            "kms_key_month",
        ),
        _count(
            "log ingestion of the loops",
            log_gb,
            f" GB ({loops:,} invocations x ~{LOG_BYTES_PER_LOOP_INVOCATION:,} B)",
            "logs_ingested_per_gb",
        ),
        _count(
            "X-Ray traces of the loops",
            loops / 1e6 if traced else 0,
            " M",
            "xray_trace_per_million",
        ),
        _count(
            f"SQS long polls of the worker's {mappings} event sources",
            receives / 1e6,
            f" M ({mappings} x ~{ESM_RECEIVES_PER_MINUTE}/min)",
            "sqs_request_per_million",
        ),
    ]


def table_capacity_lines(stateful: Template) -> list[CostLine]:
    """What provisioned tables (`tableBilling=provisioned`) hold at their minimum capacity, every
    hour, for tables and indexes alike; nothing for on-demand tables. The idle loops' reads then
    come out of that capacity rather than being billed per request."""
    write = read = 0
    for table in _resources(stateful, "AWS::DynamoDB::Table").values():
        props = table["Properties"]
        throughputs = [props.get("ProvisionedThroughput")] + [
            index.get("ProvisionedThroughput") for index in props.get("GlobalSecondaryIndexes", [])
        ]
        for throughput in filter(None, throughputs):
            write += int(throughput["WriteCapacityUnits"])
            read += int(throughput["ReadCapacityUnits"])
    if not write:
        return []
    lines = []
    for units, way, key in (
        (write, "write", "dynamodb_write_capacity_unit_hour"),
        (read, "read", "dynamodb_read_capacity_unit_hour"),
    ):
        price = PRICES[key]
        lines.append(
            CostLine(
                f"provisioned {way} capacity at its minimum (tables and indexes)",
                f"{units:,} units x {HOURS_PER_MONTH} h x {price}",
                units * HOURS_PER_MONTH * price.usd,
            )
        )
    return lines


def fargate_lines(stateless: Template) -> list[CostLine]:
    """What the Fargate worker adds while idle; empty when it is off."""
    services = list(_resources(stateless, "AWS::ECS::Service").values())
    if not services:
        return []
    (service,) = services
    (task,) = _resources(stateless, "AWS::ECS::TaskDefinition").values()
    targets = list(_resources(stateless, "AWS::ApplicationAutoScaling::ScalableTarget").values())
    tasks = (
        int(targets[0]["Properties"]["MinCapacity"])
        if targets
        else int(service["Properties"]["DesiredCount"])
    )
    vcpu = int(task["Properties"]["Cpu"]) / 1024
    memory_gb = int(task["Properties"]["Memory"]) / 1024
    vcpu_hour, gb_hour = PRICES["fargate_vcpu_hour"], PRICES["fargate_gb_hour"]
    task_hour = vcpu * vcpu_hour.usd + memory_gb * gb_hour.usd
    alarms = [
        alarm
        for logical_id, alarm in _resources(stateless, "AWS::CloudWatch::Alarm").items()
        if FARGATE_MARK in logical_id
    ]
    command = task["Properties"]["ContainerDefinitions"][0]["Command"]
    lanes = len(command[command.index("--lanes") + 1].split(","))
    # An idle `takt worker` round asks each lane once without waiting, then long-polls one
    # for IDLE_WAIT_SEC (takt/worker/process.py).
    per_minute = (lanes + 1) * 60 // IDLE_WAIT_SEC
    receives = tasks * per_minute * MINUTES_PER_MONTH
    nat_gateways = len(_resources(stateless, "AWS::EC2::NatGateway"))
    lines = [
        CostLine(
            f"Fargate tasks ({tasks} at minimum, {vcpu:g} vCPU, {memory_gb:g} GB, arm64)",
            f"{tasks} x ({vcpu:g} x {vcpu_hour} + {memory_gb:g} x {gb_hour}) x {HOURS_PER_MONTH} h",
            tasks * task_hour * HOURS_PER_MONTH,
        ),
        *_egress_lines(stateless, service, tasks, nat_gateways),
        _count(
            "Container Insights",
            CONTAINER_INSIGHTS_METRICS,
            " metrics (approx.)",
            "cloudwatch_custom_metric_month",
        ),
        _count(
            f"alarms of the worker ({len(alarms)}: scaling and not running)",
            sum(_alarm_metrics(alarm) for alarm in alarms),
            " metrics read",
            "cloudwatch_alarm_metric_month",
        ),
        _count(
            "the idle worker's SQS receives",
            receives / 1e6,
            f" M ({tasks} x ({lanes} lanes + 1) x {60 // IDLE_WAIT_SEC}/min)",
            "sqs_request_per_million",
        ),
    ]
    if nat_gateways:
        lines.append(
            _count(
                "those receives through the NAT gateway",
                receives * BYTES_PER_RECEIVE / 1e9,
                f" GB (~{BYTES_PER_RECEIVE:,} B each)",
                "nat_gateway_per_gb",
            )
        )
    return lines


def _egress_lines(
    stateless: Template, service: Template, tasks: int, nat_gateways: int
) -> list[CostLine]:
    """How the tasks reach the internet, as the template deploys it (`fargateEgress`): each
    task's own public IPv4 address, or the NAT gateways and their Elastic IPs (none in a given
    VPC, whose gateway is already paid for); nothing of a NAT gateway where none is built."""
    network = service["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]
    lines = []
    if network.get("AssignPublicIp") == "ENABLED":
        lines.append(
            _count(
                f"the tasks' public IPv4 addresses (one a task, {tasks} at minimum)",
                tasks * HOURS_PER_MONTH,
                " h",
                "public_ipv4_hour",
            )
        )
    if nat_gateways:
        lines += [
            _count("NAT gateway", nat_gateways * HOURS_PER_MONTH, " h", "nat_gateway_hour"),
            _count(
                "its public IPv4 address",
                len(_resources(stateless, "AWS::EC2::EIP")) * HOURS_PER_MONTH,
                " h",
                "public_ipv4_hour",
            ),
        ]
    return lines


def shard_count_table(shard_counts: tuple[int, ...]) -> str:
    """What the scheduler costs idle at other due-shard counts: its memory follows N (see
    `SCHEDULER`), and so do its probes; everything else stays as in the main table."""
    rows = [
        "| N (`dueShards`) | scheduler memory | scheduler compute | probe reads | together |",
        "|---:|---:|---:|---:|---:|",
    ]
    for shards in shard_counts:
        memory_mb = SCHEDULER.memory_for(shards)
        compute = _loop_compute("scheduler", memory_mb, DRIVER_LIFE_SEC).usd
        reads = _reads("probes", idle_units(shards, 1).scheduler_reads).usd
        rows.append(
            f"| {shards} | {memory_mb} MB | {_usd(compute)} | {_usd(reads)} "
            f"| {_usd(compute + reads)} |"
        )
    return "\n".join(rows)


def price_table() -> str:
    """The list prices the estimate uses."""
    rows = ["| price (us-east-1) | USD |", "|---|---:|"]
    rows += [f"| {price.unit} | {amount_text(price.listed)} |" for price in PRICES.values()]
    return "\n".join(rows)


def render(lines: list[CostLine]) -> str:
    """A Markdown table of the lines and their total."""
    rows = ["| item | arithmetic | USD / month |", "|---|---|---:|"]
    rows += [f"| {line.item} | {line.arithmetic} | {_usd(line.usd)} |" for line in lines]
    rows.append(f"| **total** | | **{_usd(sum(line.usd for line in lines))}** |")
    return "\n".join(rows)


def _template(out: Path, stack: str) -> Template:
    path = out / f"{stack}.template.json"
    try:
        template: Template = json.loads(path.read_text())
    except OSError:
        raise ValueError(f"no {path.name} in {out}: run `make synth` first") from None
    except ValueError:
        raise ValueError(f"{path} is not a synthesized template (not JSON)") from None
    return template


def report(out: Path) -> str:
    """The tables for the templates in a cdk.out directory (`make synth` writes one);
    ValueError in one line when the directory holds none."""
    stateful = _template(out, "TaktStateful")
    stateless = _template(out, "TaktStateless")
    parts = [render(base_lines(stateful, stateless))]
    capacity = table_capacity_lines(stateful)
    if capacity:
        parts += ["Provisioned tables add:", render(capacity)]
    extra = fargate_lines(stateless)
    if extra:
        parts += ["The Fargate worker adds:", render(extra)]
    parts += [
        "The scheduler at other shard counts:",
        shard_count_table(SHARD_COUNTS),
        "List prices:",
        price_table(),
    ]
    return "\n\n".join(parts)


def main(argv: list[str]) -> None:
    """`python -m infra.cost [cdk.out]`: print the report, or one line and exit status 1."""
    try:
        print(report(Path(argv[1] if len(argv) > 1 else "cdk.out")))
    except ValueError as exc:
        sys.exit(f"infra.cost: {exc}")
