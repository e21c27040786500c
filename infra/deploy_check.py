"""What a deployment with the chosen context will need from the account, checked before deploying.

`takt deploy check` reads the account's Lambda concurrency (GetAccountSettings) and DynamoDB's
throughput limits (DescribeLimits) and compares them with what the context asks for: the
reserved concurrency the stacks set (a reservation the account cannot give fails the deployment
of the stateless stack), the peak concurrency the lanes, the claimers and the API may reach (more
than the quota throttles), the due table's hot-minute writes, and the messages each lane may
have in flight at once against SQS's fixed limit (SQS has no per-account setting to read). Then
the quotas the profile is sized with (`infra.context.PROFILE_QUOTAS`, the ones `takt bench
simulate --profile-name` simulates in): the Lambda and DynamoDB ones against the account's, and
those it cannot read (a table's warm throughput, Fargate's vCPU and ECS's tasks per service)
named as `ask`, with the value to request. With provisioned tables, their capacity ranges against
DynamoDB's account and per-table quotas.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from infra.context import PROFILE_QUOTAS, ContextSource, DeployConfig, FargateWorkerConfig
from infra.driver import driver_concurrency
from infra.functions import WATCHDOG
from infra.tables import TableBilling, capacity_names
from takt.worker.deletes import FLUSH_SEC as DELETE_FLUSH_SEC

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_lambda import LambdaClient

# Lambda keeps this much of the account's concurrency unreserved: a reservation that would leave
# less is refused (PutFunctionConcurrency), and the deployment with it.
MIN_UNRESERVED = 100
# One DynamoDB partition takes at most 1,000 write units a second; the due index spreads the
# hot minute over `dueShards` partitions, sized so the seed's peak fills about a third of each
# (docs/ARCHITECTURE.md).
PARTITION_WRITE_UNITS = 1000
PLANNED_PARTITION_SHARE = 3
# A standard SQS queue hands out at most this many messages in flight (received, not yet deleted);
# beyond it, receives come back empty until some are deleted. The limit is fixed, not a quota.
SQS_IN_FLIGHT_LIMIT = 120_000
# The longest a `takt worker` slot holds a message (issue 26): from its receive to its release,
# which comes before the hold of a message claimed ahead of its time and otherwise at the lease
# (takt.worker.runner): the admission's reads and the lease's write, a few DynamoDB round trips
# (ADMISSION_SEC, their p99 under load with a retry), then the delete waits at most the batch's
# flush interval (takt.worker.deletes).
ADMISSION_SEC = 0.5
HELD_BEFORE_RELEASE_SEC = ADMISSION_SEC + DELETE_FLUSH_SEC
# The API's requests take about this long (p50 of the handler), so its peak concurrency is the
# stage's burst times this.
API_REQUEST_SEC = 0.05
# What a new on-demand table serves at once (write units/s), before any warm throughput is set.
NEW_TABLE_WRITE_UNITS = 4000
# ECS's default quota of tasks per service (Service Quotas, "Tasks per service").
ECS_TASKS_PER_SERVICE = 5000
FARGATE_CPU_UNITS_PER_VCPU = 1024

# `ask`: a quota or setting this check cannot read, named with the value the profile needs.
Level = Literal["fail", "throttle", "ok", "ask"]


@dataclass(frozen=True)
class Finding:
    level: Level
    message: str


@dataclass(frozen=True)
class Plan:
    """What the context asks of the account."""

    reserved: Mapping[str, int]
    lanes_concurrency: int
    api_concurrency: int
    due_shards: int
    # By lane: a worker function's concurrency times its batch (a batch's messages are held
    # until its slowest call ends), or the share of the Fargate slots before their lease.
    lanes_in_flight: Mapping[str, int]
    # With `regions`, each of them: every region deploys the same stacks, so each region's
    # quotas must hold them (Lambda's and DynamoDB's are per region). Empty: the CLI's region.
    regions: tuple[str, ...] = ()
    # The profile and the quotas it is sized with (profiles.json's `quotas`).
    profile: str = "seed"
    quotas: Mapping[str, int] | None = None
    # The Fargate worker's most tasks and each task's vCPU; 0 tasks when it is off.
    fargate_max_tasks: int = 0
    fargate_task_vcpu: float = 0.0
    # With `tableBilling=provisioned`, by table (its indexes included, as DynamoDB's per-table
    # quota counts them) and way: the capacity deployed (the ranges' minimums) and the most auto
    # scaling may set (their maximums). Empty on demand.
    provisioned: Mapping[str, Mapping[str, tuple[int, int]]] | None = None

    @property
    def reserved_total(self) -> int:
        return sum(self.reserved.values())


@dataclass(frozen=True)
class DictContext:
    """cdk.json's context with `-c` overrides, as the CDK app would read it."""

    values: Mapping[str, Any]

    def try_get_context(self, key: str) -> Any:
        return self.values.get(key)


def plan(context: ContextSource) -> Plan:
    config = DeployConfig.from_context(context)
    assert WATCHDOG.reserved_concurrency is not None
    return Plan(
        reserved={
            "scheduler": driver_concurrency(config.drivers),
            "watchdog": WATCHDOG.reserved_concurrency,
            "claimer": config.claimer_concurrency,
        },
        lanes_concurrency=sum(
            lane.max_concurrency
            for name, lane in config.lanes.items()
            if not (config.fargate and name in config.fargate.lanes)
        ),
        api_concurrency=max(1, round(config.api_burst_limit * API_REQUEST_SEC)),
        due_shards=config.tuning.due_shards,
        lanes_in_flight={
            name: (
                fargate_in_flight(config.fargate)
                if config.fargate and name in config.fargate.lanes
                else lane.max_concurrency * lane.batch_size
            )
            for name, lane in config.lanes.items()
        },
        regions=config.regions.regions if config.regions else (),
        profile=config.profile,
        quotas=PROFILE_QUOTAS[config.profile],
        fargate_max_tasks=config.fargate.max_tasks if config.fargate else 0,
        fargate_task_vcpu=(
            config.fargate.cpu / FARGATE_CPU_UNITS_PER_VCPU if config.fargate else 0.0
        ),
        provisioned=_provisioned_ranges(config.table_billing) if config.table_billing else None,
    )


def fargate_in_flight(worker: FargateWorkerConfig) -> int:
    """The messages a Fargate lane's slots hold at once, every slot busy with calls of
    `fargateJobSec`: a slot holds its message only from the receive to its release (at most
    HELD_BEFORE_RELEASE_SEC), not for a claimed-ahead message's hold nor for the call, so at
    most that share of the slots hold one."""
    slots = worker.max_tasks * worker.slots
    share = HELD_BEFORE_RELEASE_SEC / (HELD_BEFORE_RELEASE_SEC + worker.job_sec)
    return math.ceil(slots * share)


def _provisioned_ranges(billing: TableBilling) -> dict[str, dict[str, tuple[int, int]]]:
    """(minimum, maximum) capacity by table and way, each table's indexes added to it."""
    ranges: dict[str, dict[str, tuple[int, int]]] = {}
    for name in capacity_names():
        table = name.split("/")[0]
        capacity = billing.of(name)
        ways = ranges.setdefault(table, {"write": (0, 0), "read": (0, 0)})
        for way, low, high in (
            ("write", capacity.min_write, capacity.max_write),
            ("read", capacity.min_read, capacity.max_read),
        ):
            ways[way] = (ways[way][0] + low, ways[way][1] + high)
    return ranges


def check(plan: Plan, lambda_: LambdaClient, dynamodb: DynamoDBClient) -> list[Finding]:
    """Each way the account will refuse or throttle the deployment, or an `ok` line per check."""
    limit = lambda_.get_account_settings()["AccountLimit"]
    quota = int(limit.get("ConcurrentExecutions", 0))
    findings = []
    reserved = ", ".join(f"{name} {count}" for name, count in plan.reserved.items())
    if quota - plan.reserved_total < MIN_UNRESERVED:
        findings.append(
            Finding(
                "fail",
                f"Lambda concurrency quota {quota}: the reservations ({reserved}: "
                f"{plan.reserved_total}) would leave {quota - plan.reserved_total} unreserved, "
                f"Lambda keeps at least {MIN_UNRESERVED}; raise the quota (Service Quotas, "
                f"'Concurrent executions') to {plan.reserved_total + MIN_UNRESERVED} or more",
            )
        )
    else:
        findings.append(
            Finding("ok", f"Lambda reservations {plan.reserved_total} of quota {quota}")
        )
    peak = plan.reserved_total + plan.lanes_concurrency + plan.api_concurrency
    if peak > quota:
        findings.append(
            Finding(
                "throttle",
                f"at peak the functions may run {peak} at once (reservations "
                f"{plan.reserved_total}, lanes {plan.lanes_concurrency}, API "
                f"~{plan.api_concurrency}) against a quota of {quota}: workers or the API will "
                "throttle; lower the lanes' maxConcurrency or raise the quota",
            )
        )
    else:
        findings.append(Finding("ok", f"peak concurrency {peak} within quota {quota}"))
    limits = dynamodb.describe_limits()
    table_max = int(limits["TableMaxWriteCapacityUnits"])
    hot_minute = plan.due_shards * PARTITION_WRITE_UNITS // PLANNED_PARTITION_SHARE
    if hot_minute > table_max:
        findings.append(
            Finding(
                "throttle",
                f"the due table's hot minute is planned at {hot_minute} write units/s "
                f"({plan.due_shards} shards x a third of {PARTITION_WRITE_UNITS}) but a table "
                f"may take {table_max}: raise DynamoDB's table throughput quota",
            )
        )
    else:
        findings.append(
            Finding("ok", f"due table hot minute {hot_minute} WCU/s within {table_max}")
        )
    findings.append(_in_flight(plan))
    findings.extend(_profile_quotas(plan, quota, table_max))
    if plan.provisioned is not None:
        findings.extend(_provisioned(plan.provisioned, limits))
    return findings


def _provisioned(
    ranges: Mapping[str, Mapping[str, tuple[int, int]]], limits: Mapping[str, Any]
) -> list[Finding]:
    """Provisioned tables against DynamoDB's quotas: the account's total provisioned capacity
    (what is deployed must fit: `fail`; what auto scaling may reach at once: `throttle`) and the
    per-table one (auto scaling stops at it: `throttle`)."""
    findings = []
    for way, key in (("write", "Write"), ("read", "Read")):
        account = int(limits[f"AccountMax{key}CapacityUnits"])
        table = int(limits[f"TableMax{key}CapacityUnits"])
        deployed = sum(ways[way][0] for ways in ranges.values())
        peak = sum(ways[way][1] for ways in ranges.values())
        over = sorted(name for name, ways in ranges.items() if ways[way][1] > table)
        if deployed > account:
            findings.append(
                Finding(
                    "fail",
                    f"the tables' minimum {way} capacity, {deployed} units, exceeds the account's "
                    f"{account}: lower tableCapacity's minimums or raise DynamoDB's account quota",
                )
            )
        elif peak > account or over:
            tables = f"; {', '.join(over)} above the per-table {table}" if over else ""
            findings.append(
                Finding(
                    "throttle",
                    f"auto scaling may ask {peak} {way} units over every table at once, the "
                    f"account allows {account}{tables}: name each table's range in "
                    "tableCapacity or raise DynamoDB's quotas",
                )
            )
        else:
            findings.append(
                Finding("ok", f"provisioned {way} capacity up to {peak} within {account}")
            )
    return findings


def check_regions(
    plan: Plan, clients: Callable[[str], tuple[LambdaClient, DynamoDBClient]]
) -> list[Finding]:
    """`check` in each region of `plan.regions`, with that region's clients, each finding named
    after its region: a quota raised in one region is not raised in another."""
    return [
        Finding(finding.level, f"{region}: {finding.message}")
        for region in plan.regions
        for finding in check(plan, *clients(region))
    ]


def _in_flight(plan: Plan) -> Finding:
    over = {lane: n for lane, n in plan.lanes_in_flight.items() if n > SQS_IN_FLIGHT_LIMIT}
    if over:
        lanes = ", ".join(f"{lane} {n}" for lane, n in over.items())
        return Finding(
            "throttle",
            f"lanes may hold more messages in flight than SQS's {SQS_IN_FLIGHT_LIMIT} per "
            f"queue ({lanes}): their consumers will receive nothing until some are done; lower "
            "maxConcurrency or batchSize (or fargateMaxTasks, fargateSlots)",
        )
    largest = max(plan.lanes_in_flight.items(), key=lambda item: item[1])
    return Finding(
        "ok",
        f"lanes in flight at most {largest[1]} ({largest[0]}) of SQS's {SQS_IN_FLIGHT_LIMIT}",
    )


def _profile_quotas(plan: Plan, lambda_quota: int, table_max: int) -> list[Finding]:
    """The quotas the profile is sized with, against the account's where they can be read."""
    if plan.quotas is None:
        return []
    sized = f"the {plan.profile} profile is sized for"
    findings = []
    wanted = plan.quotas["lambdaConcurrentExecutions"]
    findings.append(
        Finding(
            "throttle",
            f"{sized} a Lambda concurrency quota of {wanted}, the account's is {lambda_quota}: "
            f"raise 'Concurrent executions' (Service Quotas) to {wanted}",
        )
        if lambda_quota < wanted
        else Finding("ok", f"Lambda quota {lambda_quota} covers the {plan.profile} profile's")
    )
    wanted = plan.quotas["tableMaxWriteUnitsPerSec"]
    findings.append(
        Finding(
            "throttle",
            f"{sized} {wanted} write units/s on the executions table, the account allows a "
            f"table {table_max}: raise DynamoDB's table-level write throughput quota to {wanted}",
        )
        if table_max < wanted
        else Finding("ok", f"table write quota {table_max} covers the {plan.profile} profile's")
    )
    warm = plan.quotas["tableWarmWriteUnitsPerSec"]
    new_table = (
        "a new provisioned table's partitions hold what it starts with, and the watchdog's raise "
        "past them waits for partitions to split, which may take longer than its minutes ahead"
        if plan.provisioned is not None
        else f"a new on-demand table serves {NEW_TABLE_WRITE_UNITS}"
    )
    if warm > NEW_TABLE_WRITE_UNITS:
        findings.append(
            Finding(
                "ask",
                f"{sized} an executions table ready for {warm} write units/s at its first burst "
                f"({new_table}): after the first "
                "deploy, set its warm throughput (aws dynamodb update-table --warm-throughput "
                f"WriteUnitsPerSecond={warm}); the app does not set it",
            )
        )
    if plan.fargate_max_tasks:
        vcpu = plan.fargate_max_tasks * plan.fargate_task_vcpu
        tasks = (
            f"; ECS's 'Tasks per service' (default {ECS_TASKS_PER_SERVICE}) at least "
            f"{plan.fargate_max_tasks}"
            if plan.fargate_max_tasks > ECS_TASKS_PER_SERVICE
            else ""
        )
        findings.append(
            Finding(
                "ask",
                f"the Fargate worker may run {plan.fargate_max_tasks} tasks of "
                f"{plan.fargate_task_vcpu:g} vCPU: Service Quotas' 'Fargate On-Demand vCPU "
                f"resource count' at least {vcpu:g}{tasks} (not read here)",
            )
        )
    return findings
