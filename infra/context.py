"""The deployment knobs, read once from CDK context and checked before anything is built.

A profile (`PROFILES`, `seed` unless `-c profile=NAME`) holds the shipped values, and cdk.json or
`cdk deploy -c key=value` overrides one. Values given with `-c` arrive as strings, those from
cdk.json and the profiles as JSON values, so every reader accepts both. A bad value fails the
synth with the knob's name in the message instead of surfacing as a CloudFormation error minutes
into a deployment.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Protocol, cast

from annotated_types import Ge, Le
from pydantic import TypeAdapter, ValidationError

from infra.driver import DRIVERS
from infra.regions import RegionPlan, RegionPlanError
from infra.tables import (
    MAX_TARGET_UTILIZATION,
    MIN_TARGET_UTILIZATION,
    MOST_TABLE_CAPACITY,
    Capacity,
    TableBilling,
    capacity_names,
)
from infra.target_grants import ContainerPlacement, TargetGrantError, TargetGrants
from takt.config import LANES, MAX_WORKER_SLOTS, RateLimit, Settings
from takt.models.egress import AllowList
from takt.models.targets import target_host

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
# Lambda's limits for an SQS event source's maximum concurrency.
MIN_LANE_CONCURRENCY = 2
MAX_LANE_CONCURRENCY = 1000
# Our start-lag budget (p99 under 2 s) leaves at most one second to batching.
MAX_BATCHING_WINDOW_SEC = 1
# One SQS receive; a larger batch needs a batching window.
SQS_RECEIVE_MAX = 10
# The most messages one worker invocation runs at once (each in a thread of its own).
MAX_WORKER_BATCH = 100
# One scheduler probes 127 partitions per shard and minute (ticker.py); above 128 shards that is
# more than one vCPU of botocore work, and Python's GIL gives a function no more than one.
MAX_DUE_SHARDS = 128
# Lambda's default account quota is 1,000 concurrent executions; a reservation above this many
# claimers is a typo long before it is a deployment (`takt deploy check` compares it with the
# account's quota).
MAX_CLAIMER_CONCURRENCY = 10_000
# The watchdog function sweeps six times per invocation (functions/watchdog/handler.py), so an
# interval below 10 s leaves the rest of each minute unswept; above 60 s it sweeps once a minute.
MIN_WATCHDOG_INTERVAL_SEC = 10
MAX_WATCHDOG_INTERVAL_SEC = 60
# A lease lasts at least four heartbeats (DESIGN: a heartbeat at most every quarter of the lease),
# so three lost heartbeats never cost a running execution.
HEARTBEATS_PER_LEASE = 4
# The due index is counted at most this many minutes ahead
# (`takt.config.Settings.scale_ahead_minutes`).
MAX_SCALE_AHEAD_MINUTES = 15
# Fargate's task sizes: CPU units -> the memory (MiB) each allows.
FARGATE_MEMORY_MIB: dict[int, tuple[int, ...]] = {
    256: (512, 1024, 2048),
    512: tuple(range(1024, 4097, 1024)),
    1024: tuple(range(2048, 8193, 1024)),
    2048: tuple(range(4096, 16385, 1024)),
    4096: tuple(range(8192, 30721, 1024)),
    8192: tuple(range(16384, 61441, 4096)),
    16384: tuple(range(32768, 122881, 8192)),
}
# Lambda allows 4 KB of environment variables per function, names and values together; the table
# names, queue URLs, role and tuning take at most 1.7 KB of it (tests/infra/test_infra_fairness.py
# counts them), so the fairness settings may take half.
MAX_FAIRNESS_ENV_BYTES = 2048
# Tenants' default notification policies share the same 4 KB with everything else.
MAX_NOTIFY_ENV_BYTES = 1024
# The context's `fairness` object: each key and the `takt.config.Settings` field it sets.
FAIRNESS_KEYS: dict[str, str] = {
    "claimMaxItems": "claim_max_items",
    "claimReadPages": "claim_read_pages",
    "fairQueueSec": "fair_queue_sec",
    "fairDispatchPerSec": "fair_dispatch_per_sec",
    "fairDispatchBurstSec": "fair_dispatch_burst_sec",
    "tenantLimits": "tenant_limits",
    "tenantLimitOverrides": "tenant_limit_overrides",
    "hostRateLimits": "host_rate_limits",
}
# Secrets Manager's characters for a secret name; an ARN is not a name.
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
# How the Fargate worker's tasks reach HTTP targets and the AWS APIs (`fargateEgress`): a public
# IPv4 address each, in public subnets ($0.005 an hour a task), or through a NAT gateway from
# private subnets ($0.045 an hour and per GB, for teams whose policy forbids public addresses).
PUBLIC_IP, NAT_GATEWAY = "publicIp", "natGateway"
FARGATE_EGRESS = (PUBLIC_IP, NAT_GATEWAY)
# The prefix lengths of the tasks' two subnets in the VPC the app builds: /20, or /18 when
# `fargateMaxTasks` needs more. Each subnet holds `fargateMaxTasks` addresses (AWS keeps five of
# every subnet): a task takes one, the service spreads its tasks over the two zones, and a
# deployment starts the new tasks before it stops the old ones (200 %). Two sizes only, whose
# ranges in the VPC never overlap, so a change of size replaces the subnets without a conflict.
TASK_SUBNET_MASKS = (20, 18)
SUBNET_RESERVED_ADDRESSES = 5
MAX_TASKS_IN_OWN_VPC = 2 ** (32 - TASK_SUBNET_MASKS[-1]) - SUBNET_RESERVED_ADDRESSES


# The profiles (docs/DEPLOY.md, "Profiles"): each is the whole context a deployment reads, in one
# file the simulator (`takt bench simulate --profile-name`) and `takt deploy check` read too, so
# what is simulated and checked is what is synthesized. It ships with the CLI package, which the
# app may read but not import (contract `cdk-app-no-tooling`); the app only runs from a checkout.
# `seed` is sized for the seed's workload; `tenx` for ten times it (docs/CAPACITY.md, "Profiles as
# shipped"). `small` is for a few thousand jobs at an idle cost under $8 a month (`takt cost
# idle`); what it gives up: one driver instead of two, so a driver that dies stops dispatch until
# the next minute's starts (up to ~60 s, not ~1 s); that driver rests once nothing is due before
# the next minute's, and a job written meanwhile for sooner waits for the indexer to start one
# (for the next minute's driver when that start is lost, `takt.dispatch.rest`); a 128 MB scheduler
# and a 512 MB claimer on one shard (dispatch of a burst of a few hundred due at once takes
# seconds); the watchdog sweeps once a minute (a lost execution is redone within lease + 60 s); no
# dashboard and no X-Ray traces (the alarms stay).
PROFILES_JSON = Path(__file__).resolve().parents[1] / "cli" / "takt_cli" / "profiles.json"
DEFAULT_PROFILE = "seed"


_PROFILES_DOCUMENT: dict[str, dict[str, Any]] = json.loads(PROFILES_JSON.read_text())
# Each profile's context, by name.
PROFILES: dict[str, dict[str, object]] = {
    name: profile["context"] for name, profile in _PROFILES_DOCUMENT.items()
}
# The account quotas each profile is sized with (`takt deploy check` compares them with the
# account's): Lambda's concurrent executions, DynamoDB's per-table write throughput, and the
# executions table's warm throughput before the first burst.
PROFILE_QUOTAS: dict[str, dict[str, int]] = {
    name: profile["quotas"] for name, profile in _PROFILES_DOCUMENT.items()
}
# Lambda's memory range, in MB.
MIN_FUNCTION_MEMORY_MB = 128
MAX_FUNCTION_MEMORY_MB = 10240
MAX_WATCHDOG_SWEEPS = 6


class ContextSource(Protocol):
    """Where knobs are read from: the app's node, or a profile over it."""

    def try_get_context(self, key: str) -> Any: ...


@dataclass(frozen=True)
class ProfiledContext:
    """A profile's context with the node's (cdk.json's and `-c`'s) set over it.

    A value the node leaves unset, or sets to the empty string (`-c key=`), is the profile's.
    """

    node: ContextSource
    profile: Mapping[str, object]

    def try_get_context(self, key: str) -> Any:
        value = self.node.try_get_context(key)
        return self.profile.get(key) if value is None or value == "" else value


class ContextError(ValueError):
    """A context value is missing or out of range; the message names the knob."""


@dataclass(frozen=True)
class LaneTuning:
    """How the worker consumes one lane."""

    max_concurrency: int
    batching_window_sec: int
    # Messages per worker invocation; the worker runs them at once (takt.worker.batch), so a
    # batch of 100 ten-second calls lasts about ten seconds. Over 10 needs a batching window.
    batch_size: int = 10


@dataclass(frozen=True)
class JwtAuth:
    """The JWT authorizer's issuer (an OIDC URL) and the audiences it accepts."""

    issuer: str
    audience: tuple[str, ...]


def settings_env_var(field: str) -> str:
    """The environment variable `takt.config.Settings` reads `field` from.

    Raises if Settings has no such field, so the app can never set a variable nobody reads.
    """
    if field not in Settings.model_fields:
        raise ValueError(f"takt.config.Settings has no field {field!r}")
    return f"TAKT_{field.upper()}"


@dataclass(frozen=True)
class RuntimeTuning:
    """The `takt.config.Settings` values every function and the Fargate worker receive.

    Each field is named after the Settings field it sets, so `environment()` derives the variable
    names and cannot drift from what Settings reads.
    """

    due_shards: int
    # A hot minute's split (takt.store.due): each partition's share of its sampled count, and
    # the most N-shard sets it is split into.
    due_split_items: int
    due_split_max: int
    open_shards: int
    # Writes one claim keeps in flight (each phase's, docs/CAPACITY.md); also the scheduler's
    # probe threads.
    claimer_threads: int
    history_retention_days: float
    lease_sec: float
    heartbeat_sec: float
    watchdog_interval_sec: float
    # The claim leaves an `allow` occurrence's execution to the lease that starts it (one write
    # for both; takt.config.Settings.record_at_lease).
    record_at_lease: bool
    # A claim passes the due items it fired with its partition's cursor, one write, rather than
    # deleting each (takt.config.Settings.due_cursor); the due writers' timeouts must allow it
    # (infra.functions.check_due_cursor).
    due_cursor: bool

    def environment(self) -> dict[str, str]:
        """`TAKT_*` variables, as strings (`7.0` for a float: Settings parses both forms)."""
        return {settings_env_var(field): str(value) for field, value in asdict(self).items()}


@dataclass(frozen=True)
class FairnessTuning:
    """The `fairness` settings (docs/FAIRNESS.md), checked by the Settings fields they set.

    `values` holds, by `takt.config.Settings` field (the values of `FAIRNESS_KEYS`), what
    Settings would parse, so a value the synth accepts is one every function accepts.
    `environment` writes only the values that differ from Settings' defaults: the shipped context,
    everything off, adds no variable, and each function gets only the settings it reads
    (`FunctionSpec.fairness`).
    """

    values: Mapping[str, object]

    def environment(self, fields: Iterable[str]) -> dict[str, str]:
        """`TAKT_*` variables for the named settings that differ from Settings' defaults."""
        variables = {}
        for field in fields:
            value = self.values[field]
            if value != _settings_default(field):
                variables[settings_env_var(field)] = _settings_text(field, value)
        return variables


@dataclass(frozen=True)
class FargateWorkerConfig:
    """The optional Fargate service running `takt worker` on the lanes in `lanes`.

    `vpc_id` None means the app builds a VPC of its own.
    """

    cpu: int
    memory_mib: int
    min_tasks: int
    max_tasks: int
    lanes: tuple[str, ...]
    vpc_id: str | None
    # Executions a task runs at once (`takt worker --concurrency`): mostly waiting calls.
    slots: int = 200
    # How far ahead the watchdog counts the due index to size the service (0: not at all), and
    # the mean run time it sizes for (takt.dispatch.ahead).
    scale_ahead_minutes: int = 5
    job_sec: float = 10.0
    # `fargateEgress`: PUBLIC_IP or NAT_GATEWAY (docs/DEPLOY.md, "Fargate worker").
    egress: str = PUBLIC_IP


@dataclass(frozen=True)
class DeployConfig:
    """Everything the stacks take from context. `jwt` is None when the API uses IAM (SigV4);
    `fargate` is None unless `fargateWorker` is true."""

    jwt: JwtAuth | None
    api_rate_limit: float
    api_burst_limit: int
    log_level: str
    lanes: dict[str, LaneTuning]
    tuning: RuntimeTuning
    schedule_lag_alarm_ms: int
    recovery_alarm_threshold: int
    alarm_email: str | None
    signing_secret_name: str | None
    fargate: FargateWorkerConfig | None
    fairness: FairnessTuning
    # Non-public addresses HTTP targets may reach (`egressAllow`: CIDRs and host names); empty
    # refuses them all (docs/SECURITY.md).
    egress_allow: tuple[str, ...] = ()
    # The profile the values came from.
    profile: str = "seed"
    drivers: int = DRIVERS
    # The claimer function's reserved concurrency (`claimerConcurrency`): the most claims that
    # run at once, a hot minute's sub-partitions and every other minute's together; a cap, so a
    # burst of claims cannot take the account's concurrency from the API and the workers, and a
    # floor they cannot take from it.
    claimer_concurrency: int = 128
    # Memory by function name, over `FunctionSpec.memory_for`.
    function_memory_mb: Mapping[str, int] = dataclasses.field(default_factory=dict)
    watchdog_sweeps: int = MAX_WATCHDOG_SWEEPS
    dashboard: bool = True
    tracing: bool = True
    # Drivers end early when nothing is due soon, and the indexer starts one for a job due
    # sooner (`takt.dispatch.rest`).
    driver_rest: bool = False
    # The Lambda functions, state machines and SigV4-signed APIs the workers may call.
    targets: TargetGrants = dataclasses.field(default_factory=TargetGrants)
    # The `iss` of takt's OIDC tokens (with `oidcKeyArn`); Settings' default when None.
    oidc_issuer: str | None = None
    # Each tenant's default notification policy (`notifyDefaults`), as the JSON
    # `Settings.notify_defaults` reads; None when the context sets none.
    notify_defaults: str | None = None
    # `tableBilling=provisioned` (with `tableCapacity`, `tableTargetUtilization`); None is on
    # demand, the default (docs/DEPLOY.md, "Table billing").
    table_billing: TableBilling | None = None
    # `regions` (with `witnessRegion`): the deployment across regions; None is one region, the
    # CDK CLI's (docs/DEPLOY.md, "Regions").
    regions: RegionPlan | None = None

    @classmethod
    def from_context(cls, node: ContextSource) -> DeployConfig:
        """Read and check every knob; raise ContextError naming the first bad one."""
        profile = str(_raw(node, "profile") or DEFAULT_PROFILE)
        if profile not in PROFILES:
            raise ContextError(
                f"context 'profile' must be one of {tuple(PROFILES)}, not {profile!r}"
            )
        given = node
        node = ProfiledContext(node, PROFILES[profile])
        auth = _required(node, "auth")
        if auth not in ("iam", "jwt"):
            raise ContextError(f"context 'auth' must be 'iam' or 'jwt', not {auth!r}")
        jwt = None
        if auth == "jwt":
            issuer = _optional_str(node, "jwtIssuer")
            audience = _string_list(node, "jwtAudience")
            if not issuer or not audience:
                raise ContextError("context 'auth=jwt' needs 'jwtIssuer' and 'jwtAudience'")
            jwt = JwtAuth(issuer=issuer, audience=audience)
        log_level = str(_required(node, "logLevel")).upper()
        if log_level not in LOG_LEVELS:
            raise ContextError(f"context 'logLevel' must be one of {LOG_LEVELS}")
        # Checked whatever the regions: a bad `tableBilling` or `tableCapacity` is refused by name.
        table_billing = _table_billing(node)
        signing_secret_name = _optional_str(node, "signingSecretName")
        if signing_secret_name is not None and not _SECRET_NAME.match(signing_secret_name):
            raise ContextError(
                "context 'signingSecretName' must be a Secrets Manager secret name "
                f"(letters, digits and /_+=.@-), not {signing_secret_name!r}"
            )
        return cls(
            jwt=jwt,
            api_rate_limit=_number(node, "apiRateLimit", minimum=1),
            api_burst_limit=_integer(node, "apiBurstLimit", minimum=1),
            log_level=log_level,
            lanes=_lanes(node),
            # Across regions the claim writes the record (`recordAtLease` gives way) and deletes
            # the due items it fired (`dueCursor` gives way): the region fault scenarios run the
            # claim's record only, and the replication is not proven with the cursor
            # (docs/DEPLOY.md).
            tuning=replace(_tuning(node), record_at_lease=False, due_cursor=False)
            if _string_list(node, "regions")
            else _tuning(node),
            schedule_lag_alarm_ms=_integer(node, "scheduleLagAlarmMs", minimum=1000),
            recovery_alarm_threshold=_integer(node, "recoveryAlarmThreshold", minimum=1),
            alarm_email=_optional_str(node, "alarmEmail"),
            signing_secret_name=signing_secret_name,
            fargate=_fargate(node) if _boolean(node, "fargateWorker") else None,
            fairness=_fairness(node),
            egress_allow=_egress_allow(node),
            targets=_target_grants(node),
            oidc_issuer=_optional_str(node, "oidcIssuer"),
            notify_defaults=_notify_defaults(node),
            profile=profile,
            drivers=_optional_int(node, "drivers", DRIVERS, minimum=1, maximum=DRIVERS),
            claimer_concurrency=_integer(
                node, "claimerConcurrency", minimum=1, maximum=MAX_CLAIMER_CONCURRENCY
            ),
            function_memory_mb=_function_memory(node),
            watchdog_sweeps=_optional_int(
                node, "watchdogSweeps", MAX_WATCHDOG_SWEEPS, minimum=1, maximum=MAX_WATCHDOG_SWEEPS
            ),
            dashboard=_optional_bool(node, "dashboard", default=True),
            tracing=_optional_bool(node, "tracing", default=True),
            driver_rest=_optional_bool(node, "driverRest", default=False),
            # A deployment across regions bills its global tables on demand: a profile's
            # `provisioned` gives way to it, a `-c tableBilling=provisioned` is refused there.
            table_billing=None if _string_list(node, "regions") else table_billing,
            regions=_regions(node, given),
        )


TABLE_BILLING = ("onDemand", "provisioned")


def _regions(node: ContextSource, given: ContextSource) -> RegionPlan | None:
    """`regions` and `witnessRegion`, checked against the lease table's MRSC rules, and against
    a `tableBilling=provisioned` the deployment `given` sets itself (not its profile's)."""
    regions = _string_list(node, "regions")
    witness = _optional_str(node, "witnessRegion")
    if not regions:
        if witness is not None:
            raise ContextError("context 'witnessRegion' needs 'regions'")
        return None
    if _raw(given, "tableBilling") == "provisioned":
        raise ContextError(
            "context 'tableBilling=provisioned' is for one region: a deployment across "
            "'regions' bills its global tables on demand"
        )
    if str(_raw(given, "recordAtLease")).lower() == "true":
        raise ContextError(
            "context 'recordAtLease=true' is for one region: across 'regions' the claim writes "
            "each execution, as the region fault scenarios prove it"
        )
    if str(_raw(given, "dueCursor")).lower() == "true":
        raise ContextError(
            "context 'dueCursor=true' is for one region: across 'regions' a claim deletes the "
            "due items it fired, since the replication is not proven with the cursor"
        )
    try:
        return RegionPlan.parse(regions, witness)
    except RegionPlanError as exc:
        raise ContextError(str(exc)) from None


def _table_billing(node: ContextSource) -> TableBilling | None:
    """`tableBilling`, and for `provisioned` the `tableCapacity` object
    (`{"executions": {"write": [min, max], "read": [min, max]}, ...}`) and
    `tableTargetUtilization` (percent)."""
    mode = str(_raw(node, "tableBilling") or "onDemand")
    if mode not in TABLE_BILLING:
        raise ContextError(f"context 'tableBilling' must be one of {TABLE_BILLING}, not {mode!r}")
    if mode == "onDemand":
        return None
    utilization = _raw(node, "tableTargetUtilization")
    target = _bounded_int(
        70 if utilization is None else utilization,
        "tableTargetUtilization",
        minimum=MIN_TARGET_UTILIZATION,
        maximum=MAX_TARGET_UTILIZATION,
    )
    value = _raw(node, "tableCapacity")
    try:
        given = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise ContextError(
            f"context 'tableCapacity' must be a JSON object, not {value!r}"
        ) from None
    if given is not None and not isinstance(given, dict):
        raise ContextError(f"context 'tableCapacity' must be a JSON object, not {value!r}")
    capacity: dict[str, Capacity] = {}
    for name, ranges in (given or {}).items():
        if name not in capacity_names():
            raise ContextError(
                f"context 'tableCapacity.{name}' is not a table or index; they are "
                + ", ".join(capacity_names())
            )
        if not isinstance(ranges, dict) or not set(ranges) <= {"write", "read"}:
            raise ContextError(
                f"context 'tableCapacity.{name}' must be an object of 'write' and 'read' ranges"
            )
        bounds = {
            way: _capacity_range(ranges.get(way), f"tableCapacity.{name}.{way}")
            for way in ("write", "read")
        }
        capacity[name] = Capacity(*bounds["write"], *bounds["read"])
    return TableBilling(target_utilization=target, capacity=capacity)


def _capacity_range(value: object, what: str) -> tuple[int, int]:
    """`[min, max]` capacity units (1 to MOST_TABLE_CAPACITY, min at most max)."""
    if value is None:
        default = Capacity()
        return default.min_write, default.max_write
    if not isinstance(value, list) or len(value) != 2:
        raise ContextError(f"context {what!r} must be [min, max], not {value!r}")
    low = _bounded_int(value[0], f"{what}[0]", minimum=1, maximum=MOST_TABLE_CAPACITY)
    high = _bounded_int(value[1], f"{what}[1]", minimum=low, maximum=MOST_TABLE_CAPACITY)
    return low, high


def _notify_defaults(node: ContextSource) -> str | None:
    """The `notifyDefaults` object ({tenant: policy}), checked as Settings checks it."""
    value = _raw(node, "notifyDefaults")
    if value is None:
        return None
    try:
        given = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise ContextError(
            f"context 'notifyDefaults' must be a JSON object, not {value!r}"
        ) from None
    parsed = _settings_value("notify_defaults", given, "notifyDefaults")
    text = _settings_adapter("notify_defaults").dump_json(parsed).decode()
    if len(text) > MAX_NOTIFY_ENV_BYTES:
        raise ContextError(
            f"context 'notifyDefaults' takes {len(text)} bytes of a function's environment, more "
            f"than {MAX_NOTIFY_ENV_BYTES}: give defaults to fewer tenants, or set `notify` on "
            "their jobs"
        )
    return text


def _optional_int(
    node: ContextSource, key: str, default: int, *, minimum: int, maximum: int
) -> int:
    value = _raw(node, key)
    if value is None:
        return default
    return _bounded_int(value, key, minimum=minimum, maximum=maximum)


def _optional_bool(node: ContextSource, key: str, *, default: bool) -> bool:
    return default if _raw(node, key) is None else _boolean(node, key)


def _function_memory(node: ContextSource) -> dict[str, int]:
    """`functionMemoryMb`: memory by function name, over each function's own sizing."""
    value = _raw(node, "functionMemoryMb")
    try:
        given = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        given = value
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ContextError(f"context 'functionMemoryMb' must be a JSON object, not {value!r}")
    return {
        str(name): _bounded_int(
            size,
            f"functionMemoryMb.{name}",
            minimum=MIN_FUNCTION_MEMORY_MB,
            maximum=MAX_FUNCTION_MEMORY_MB,
        )
        for name, size in given.items()
    }


def _target_grants(node: ContextSource) -> TargetGrants:
    try:
        return TargetGrants.from_lists(
            _string_list(node, "lambdaTargets"),
            _string_list(node, "stateMachineTargets"),
            _string_list(node, "sigv4Targets"),
            _string_list(node, "publishTargets"),
            _optional_str(node, "oidcKeyArn"),
            _containers(node),
        )
    except TargetGrantError as exc:
        raise ContextError(str(exc)) from None


def _containers(node: ContextSource) -> ContainerPlacement | None:
    """Container targets' placement, when `containerCluster` turns them on."""
    cluster = _optional_str(node, "containerCluster")
    if cluster is None:
        return None
    return ContainerPlacement(
        cluster=cluster,
        subnets=_string_list(node, "containerSubnets"),
        security_groups=_string_list(node, "containerSecurityGroups"),
        execution_role=_optional_str(node, "containerExecutionRoleArn") or "",
        task_role=_optional_str(node, "containerTaskRoleArn"),
        log_group=_optional_str(node, "containerLogGroup") or "/takt/containers",
        public_ip=_optional_bool(node, "containerPublicIp", default=False),
    )


def _egress_allow(node: ContextSource) -> tuple[str, ...]:
    entries = _string_list(node, "egressAllow")
    try:
        AllowList.parse(entries)
    except ValueError as exc:
        raise ContextError(f"context 'egressAllow': {exc}") from None
    return entries


def _fairness(node: ContextSource) -> FairnessTuning:
    """The `fairness` object; a key left out or null keeps Settings' default, "null" is off."""
    value = _raw(node, "fairness")
    try:
        given = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise ContextError(f"context 'fairness' must be a JSON object, not {value!r}") from None
    if given is not None and not isinstance(given, dict):
        raise ContextError(f"context 'fairness' must be a JSON object, not {value!r}")
    # A key set to "null" turns its setting off (None), as in the environment; a key left out
    # or null (which the CDK drops) keeps the default.
    off = {key for key, item in (given or {}).items() if item == "null"}
    given = cast(dict[str, object], _none_for_null(given or {}))
    unknown = sorted(set(given) - set(FAIRNESS_KEYS))
    if unknown:
        raise ContextError(
            f"context 'fairness.{unknown[0]}' is not a fairness setting; they are "
            + ", ".join(FAIRNESS_KEYS)
        )
    values = {
        field: _settings_off(field, f"fairness.{key}")
        if key in off
        else _settings_value(field, given.get(key), f"fairness.{key}")
        for key, field in FAIRNESS_KEYS.items()
    }
    fairness = FairnessTuning(values)
    # Parsed by Settings' `host_rate_limits`, hence of its type.
    for host in cast(Mapping[str, RateLimit], values["host_rate_limits"]):
        if not _is_target_host(host):
            raise ContextError(
                f"context 'fairness.hostRateLimits.{host}' must be a host as an HTTP target's "
                "URL gives it: lower case, without scheme, port or path"
            )
    size = sum(
        len(name) + len(text) for name, text in fairness.environment(FAIRNESS_KEYS.values()).items()
    )
    if size > MAX_FAIRNESS_ENV_BYTES:
        raise ContextError(
            f"context 'fairness' takes {size} bytes of a function's environment, more than "
            f"{MAX_FAIRNESS_ENV_BYTES} (Lambda allows 4 KB for all of its variables): list in "
            "'tenantLimitOverrides' only the tenants whose limits differ, and only what differs"
        )
    return fairness


def _none_for_null(value: object) -> object:
    """`value` with each "null" string as None, as Settings reads the environment.

    The CDK drops a JSON null inside a context object on its way to the app, so a limit is lifted
    with the string "null" (`{"max_jobs": "null"}`); a plain null would leave the default.
    """
    if value == "null":
        return None
    if isinstance(value, dict):
        return {key: _none_for_null(item) for key, item in value.items()}
    return value


def _settings_off(field: str, knob: str) -> object:
    """None for `field`, when Settings allows it to be off."""
    try:
        return _settings_adapter(field).validate_python(None)
    except ValidationError:
        raise ContextError(f'context {knob!r} cannot be turned off ("null")') from None


def _settings_default(field: str) -> object:
    return Settings.model_fields[field].get_default(call_default_factory=True)


def _settings_adapter(field: str) -> TypeAdapter[object]:
    """Parses a value as `takt.config.Settings` parses `field`: its type and its bounds."""
    info = Settings.model_fields[field]
    # Typed Any: a field's annotation is only known at run time.
    annotated: Any = Annotated[info.annotation, info]
    return TypeAdapter(annotated)


def _settings_value(field: str, value: object, knob: str) -> object:
    """`value` as Settings would read `field`; None is Settings' default."""
    if value is None:
        return _settings_default(field)
    try:
        parsed = _settings_adapter(field).validate_python(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join([knob, *map(str, error["loc"])])
        raise ContextError(
            f"context {where!r}: {error['msg']} (given {error['input']!r})"
        ) from None
    # Pydantic reads true as 1, which no one writes for a count or a rate.
    if isinstance(value, bool):
        raise ContextError(f"context {knob!r} must be a number, not {value!r}")
    return parsed


def _settings_text(field: str, value: object) -> str:
    """`value` as the environment variable Settings reads it from: JSON for objects (only the
    limits given, the rest being Settings' defaults anyway), the number for numbers."""
    if isinstance(value, int | float):
        return str(value)
    return _settings_adapter(field).dump_json(value, exclude_unset=True).decode()


def _is_target_host(host: str) -> bool:
    """Whether `host` is what `target_host` gives for a URL naming it, the key a limit needs."""
    netloc = f"[{host}]" if ":" in host else host
    try:
        return target_host(f"https://{netloc}/") == host
    except ValueError:
        return False


def _raw(node: ContextSource, key: str) -> object:
    value = node.try_get_context(key)
    # `-c key=` passes an empty string: treat it as unset rather than as a value.
    return None if value == "" else value


def _required(node: ContextSource, key: str) -> object:
    value = _raw(node, key)
    if value is None:
        raise ContextError(
            f"context {key!r} is missing: set it in the profile, in cdk.json or pass -c {key}=..."
        )
    return value


def _optional_str(node: ContextSource, key: str) -> str | None:
    value = _raw(node, key)
    return None if value is None else str(value)


def _string_list(node: ContextSource, key: str) -> tuple[str, ...]:
    value = _raw(node, key)
    if value is None:
        return ()
    items = value if isinstance(value, list) else str(value).split(",")
    return tuple(item.strip() for item in map(str, items) if item.strip())


def _boolean(node: ContextSource, key: str) -> bool:
    value = _required(node, key)
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise ContextError(f"context {key!r} must be true or false, not {value!r}")


def _number(
    node: ContextSource, key: str, *, minimum: float, maximum: float | None = None
) -> float:
    value = _required(node, key)
    try:
        number = float(str(value))
    except ValueError:
        raise ContextError(f"context {key!r} must be a number, not {value!r}") from None
    if number < minimum or (maximum is not None and number > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise ContextError(f"context {key!r} must be {bound}, not {value!r}")
    return number


def _integer(node: ContextSource, key: str, *, minimum: int, maximum: int | None = None) -> int:
    return _bounded_int(_required(node, key), key, minimum=minimum, maximum=maximum)


def _settings_bounds(field: str) -> tuple[int, int]:
    """The (ge, le) bounds `takt.config.Settings` puts on an integer field."""
    metadata = Settings.model_fields[field].metadata
    minimum = next(int(str(m.ge)) for m in metadata if isinstance(m, Ge))
    maximum = next(int(str(m.le)) for m in metadata if isinstance(m, Le))
    return minimum, maximum


def _tuning(node: ContextSource) -> RuntimeTuning:
    due_min, due_max = _settings_bounds("due_shards")
    split_max_min, split_max_max = _settings_bounds("due_split_max")
    open_min, open_max = _settings_bounds("open_shards")
    threads_min, threads_max = _settings_bounds("claimer_threads")
    lease_sec = _number(node, "leaseSec", minimum=10, maximum=3600)
    heartbeat_sec = _number(node, "heartbeatSec", minimum=1)
    if heartbeat_sec * HEARTBEATS_PER_LEASE > lease_sec:
        raise ContextError(
            f"context 'heartbeatSec' ({heartbeat_sec:g}) must be at most a quarter of 'leaseSec' "
            f"({lease_sec:g}), so a lease outlives three lost heartbeats"
        )
    return RuntimeTuning(
        due_shards=_integer(
            node, "dueShards", minimum=due_min, maximum=min(due_max, MAX_DUE_SHARDS)
        ),
        due_split_items=_integer(node, "dueSplitItems", minimum=1),
        due_split_max=_integer(node, "dueSplitMax", minimum=split_max_min, maximum=split_max_max),
        open_shards=_integer(node, "openShards", minimum=open_min, maximum=open_max),
        claimer_threads=_integer(node, "claimerThreads", minimum=threads_min, maximum=threads_max),
        history_retention_days=_number(node, "historyRetentionDays", minimum=1),
        lease_sec=lease_sec,
        heartbeat_sec=heartbeat_sec,
        watchdog_interval_sec=_number(
            node,
            "watchdogIntervalSec",
            minimum=MIN_WATCHDOG_INTERVAL_SEC,
            maximum=MAX_WATCHDOG_INTERVAL_SEC,
        ),
        record_at_lease=_boolean(node, "recordAtLease"),
        due_cursor=_boolean(node, "dueCursor"),
    )


def _fargate(node: ContextSource) -> FargateWorkerConfig:
    cpu = _integer(node, "fargateCpu", minimum=min(FARGATE_MEMORY_MIB))
    if cpu not in FARGATE_MEMORY_MIB:
        raise ContextError(f"context 'fargateCpu' must be one of {sorted(FARGATE_MEMORY_MIB)}")
    memory_mib = _integer(node, "fargateMemoryMiB", minimum=1)
    if memory_mib not in FARGATE_MEMORY_MIB[cpu]:
        allowed = FARGATE_MEMORY_MIB[cpu]
        raise ContextError(
            f"context 'fargateMemoryMiB' must be one Fargate allows with {cpu} CPU units: "
            f"{allowed[0]} to {allowed[-1]} in steps of {allowed[1] - allowed[0]}"
        )
    min_tasks = _integer(node, "fargateMinTasks", minimum=0)
    max_tasks = _integer(node, "fargateMaxTasks", minimum=max(min_tasks, 1))
    lanes = _string_list(node, "fargateLanes")
    if not lanes or not set(lanes) <= set(LANES) or len(set(lanes)) != len(lanes):
        raise ContextError(f"context 'fargateLanes' must list distinct lanes of {LANES}")
    vpc_id = _optional_str(node, "fargateVpcId")
    if vpc_id is not None and not _VPC_ID.match(vpc_id):
        raise ContextError(f"context 'fargateVpcId' must be a VPC id (vpc-...), not {vpc_id!r}")
    if vpc_id is None and max_tasks > MAX_TASKS_IN_OWN_VPC:
        raise ContextError(
            f"context 'fargateMaxTasks' must be at most {MAX_TASKS_IN_OWN_VPC} (what each of the "
            f"VPC's two /{TASK_SUBNET_MASKS[-1]} task subnets holds), not {max_tasks}, "
            "or give a larger VPC with fargateVpcId"
        )
    egress = str(_required(node, "fargateEgress"))
    if egress not in FARGATE_EGRESS:
        raise ContextError(
            f"context 'fargateEgress' must be one of {FARGATE_EGRESS}, not {egress!r}"
        )
    return FargateWorkerConfig(
        cpu=cpu,
        memory_mib=memory_mib,
        min_tasks=min_tasks,
        max_tasks=max_tasks,
        lanes=lanes,
        vpc_id=vpc_id,
        slots=_integer(node, "fargateSlots", minimum=1, maximum=MAX_WORKER_SLOTS),
        scale_ahead_minutes=_integer(
            node, "fargateScaleAheadMinutes", minimum=0, maximum=MAX_SCALE_AHEAD_MINUTES
        ),
        job_sec=_number(node, "fargateJobSec", minimum=0.1),
        egress=egress,
    )


def _bounded_int(value: object, what: str, *, minimum: int, maximum: int | None = None) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise ContextError(f"context {what!r} must be an integer, not {value!r}") from None
    if number < minimum or (maximum is not None and number > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise ContextError(f"context {what!r} must be {bound}, not {number}")
    return number


def _lanes(node: ContextSource) -> dict[str, LaneTuning]:
    value = _required(node, "lanes")
    try:
        lanes = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise ContextError(f"context 'lanes' must be a JSON object, not {value!r}") from None
    if not isinstance(lanes, dict) or set(lanes) != set(LANES):
        raise ContextError(f"context 'lanes' must map exactly the lanes {LANES} to settings")
    tuning = {}
    for lane in LANES:
        settings = lanes[lane]
        if not isinstance(settings, dict):
            raise ContextError(f"context 'lanes.{lane}' must be an object")
        tuning[lane] = LaneTuning(
            max_concurrency=_bounded_int(
                settings.get("maxConcurrency"),
                f"lanes.{lane}.maxConcurrency",
                minimum=MIN_LANE_CONCURRENCY,
                maximum=MAX_LANE_CONCURRENCY,
            ),
            batching_window_sec=_bounded_int(
                settings.get("batchingWindowSec"),
                f"lanes.{lane}.batchingWindowSec",
                minimum=0,
                maximum=MAX_BATCHING_WINDOW_SEC,
            ),
            batch_size=_bounded_int(
                settings.get("batchSize", SQS_RECEIVE_MAX),
                f"lanes.{lane}.batchSize",
                minimum=1,
                maximum=MAX_WORKER_BATCH,
            ),
        )
        if tuning[lane].batch_size > SQS_RECEIVE_MAX and not tuning[lane].batching_window_sec:
            raise ContextError(
                f"context 'lanes.{lane}.batchSize' over {SQS_RECEIVE_MAX} needs "
                f"'lanes.{lane}.batchingWindowSec' of at least 1 (Lambda's rule)"
            )
    return tuning
