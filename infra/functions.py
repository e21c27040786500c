"""takt's six Lambda functions, their configuration and their permissions.

Every function runs `functions/<name>/handler.py` on Python 3.13 on Graviton (arm64, about 20 %
cheaper per GB-second than x86 and every dependency ships aarch64 wheels) with the takt layer.
Each gets its own role holding only what its handler does, granted with `grant_*` so that no
statement carries a wildcard action, and its own log group with a retention, so no log is kept
forever and no role needs `logs:CreateLogGroup`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagPackSuppression, NagSuppressions, RegexAppliesTo
from constructs import Construct

from infra import metric_names
from infra.context import ContextError, DeployConfig, settings_env_var
from infra.driver import (
    DRIVER_CONCURRENCY,
    DRIVER_TIMEOUT_SEC,
    driver_concurrency,
    driver_timeout_sec,
)
from infra.lanes import Lanes
from infra.layer import ARCHITECTURE, PROJECT_ROOT, RUNTIME
from infra.table_ahead import scale_tables_ahead
from infra.tables import Tables
from infra.target_grants import container_suppressions
from infra.tenant_access import TENANT_TABLES, TenantDataRole, leading_keys_access
from takt.config import Settings
from takt.resources import DUE, EXECUTIONS, JOBS, REGIONS, TENANTS, TableSpec
from takt.store.quarantine import QUARANTINE_PARTITION

FUNCTIONS_DIR = PROJECT_ROOT / "functions"
HANDLER = "handler.handler"
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# The worker's timeout bounds one batch; the lanes' visibility timeout (QueueSpec, 360 s) must be
# at least six times this, so Lambda can retry a throttled batch before the message reappears.
WORKER_TIMEOUT_SEC = 60
# The share of invocations logged at DEBUG (Powertools' `sample_rate`): logs are billed by the
# byte (docs/CAPACITY.md prices them), so the happy path logs one INFO line per execution.
DEBUG_SAMPLE_RATE = 0.01
# The watchdog loops for about 60 s inside one invocation per minute (the scheduler's drivers
# live longer: infra/driver.py).
LOOP_TIMEOUT_SEC = 70
# Lambda's memory at which a function gets one full vCPU; Python's GIL cannot use more.
ONE_VCPU_MEMORY_MB = 1769
# Every secret a tenant's HTTP targets name starts with this (then the tenant id and a slash);
# the worker may read those and no other secret (docs/SECURITY.md).
TARGET_SECRET_PREFIX = str(Settings.model_fields["secret_prefix"].default)

# `tenant`: item actions only, never Scan, on tables whose keys start with the tenant (the API).
Access = Literal["read", "read_write", "tenant"]

# Fairness settings (docs/FAIRNESS.md), by `takt.config.Settings` field. Every function that sends
# to the lanes routes its sends through the tenants' dispatch shares, which are weighted by the
# tenants' limits (`takt.wiring.Services.lanes`), so each of them reads both.
TENANT_LIMITS = ("tenant_limits", "tenant_limit_overrides")
FAIR_DISPATCH = ("fair_dispatch_per_sec", "fair_dispatch_burst_sec")


@dataclass(frozen=True)
class FunctionSpec:
    """One function: its folder under functions/, its size, and what it may touch."""

    name: str
    description: str
    memory_mb: int
    timeout_sec: int
    tables: dict[TableSpec, Access]
    sends_to_lanes: bool = False
    # Set for the functions invoked once a minute, so their planned overlap is allowed but a
    # pile-up of late invocations is not.
    reserved_concurrency: int | None = None
    # Set for the asynchronously invoked functions: the next tick (a second or a minute later)
    # is their retry, so Lambda's own retries would only add late duplicates.
    async_retries: int | None = None
    # Memory (hence CPU) that grows with the due index's shard count N, up to one vCPU; and
    # what it grows by with the claim cursor (`dueCursor`), when that adds work per shard.
    memory_mb_per_due_shard: int = 0
    memory_mb_per_due_shard_with_cursor: int = 0
    # Set for the functions that call HTTP targets: they sign requests with the signing secret
    # and read the secrets targets name, under TARGET_SECRET_PREFIX.
    signs_requests: bool = False
    # Set for the functions that derive tenants' webhook signing keys from the deployment's
    # master signing secret: the worker (to sign) and the API (to show and rotate them).
    reads_signing_master: bool = False
    # Set for the API, whose stats route reads takt's metrics and the lanes' depths.
    reads_stats: bool = False
    # Set for the claimer, which sizes a backlogged tenant's claims and fast-lane share from
    # the lanes' depths (takt.fairness.adaptive).
    measures_lanes: bool = False
    # The fairness settings the function reads (Settings fields); it gets each one set in the
    # context's `fairness` object, and no other.
    fairness: tuple[str, ...] = ()
    # Set for the functions that act (claim, send, advance, lease, complete): in a deployment
    # across regions each acts only while its region holds the region lease, which it proves
    # by a conditional renewal (takt.regions.fence), so it reads and writes the lease. The
    # indexer keeps every region's due index from its replica's stream whoever holds the lease
    # and never touches it; the API serves every region and only reads who holds it, to write
    # changes to existing jobs in that region's replica (granted in `TaktFunctions`).
    fenced: bool = False

    def memory_for(self, due_shards: int, *, due_cursor: bool = False) -> int:
        """The function's memory for a deployment with `due_shards` shards (and the claim
        cursor, `due_cursor`)."""
        per_shard = self.memory_mb_per_due_shard
        if due_cursor and self.memory_mb_per_due_shard_with_cursor:
            per_shard = self.memory_mb_per_due_shard_with_cursor
        scaled = per_shard * due_shards
        return max(self.memory_mb, min(scaled, ONE_VCPU_MEMORY_MB))


API = FunctionSpec(
    name="api",
    description="takt job API behind the HTTP API",
    memory_mb=512,
    timeout_sec=10,
    # Run-now and re-run create or reset an execution and send it to its lane. Never the due
    # index: the indexer keeps it from the jobs table's stream (docs/SECURITY.md).
    # Jobs, executions, idempotency keys and the tenants table (limits; run-now's send takes its
    # tenant's dispatch share, docs/FAIRNESS.md), each reached only through the request tenant's
    # session of `TenantDataRole`, confined to its items by dynamodb:LeadingKeys.
    tables=dict.fromkeys(TENANT_TABLES, "tenant"),
    sends_to_lanes=True,
    reads_stats=True,
    reads_signing_master=True,
    # Creates are held to the tenant's limits; run-now's send takes its dispatch share.
    fairness=(*TENANT_LIMITS, *FAIR_DISPATCH),
)
SCHEDULER = FunctionSpec(
    name="scheduler",
    description="takt per-second driver: fans out claimers for two minutes, beside another",
    memory_mb=256,
    timeout_sec=DRIVER_TIMEOUT_SEC,
    # The ticker keeps its watermark in the due table and checks old buckets are empty; the
    # drivers claim their seconds and starts there (infra/driver.py).
    tables={DUE: "read_write"},
    reserved_concurrency=DRIVER_CONCURRENCY,
    async_retries=0,
    fenced=True,
    # Every second the ticker probes each shard of two or three minute buckets, about 2.1 queries
    # per shard and second (4 in the busiest second), and botocore spends about 1.3 ms of CPU on
    # each (measured, X-Ray's subsegment included). Only one of the two drivers sweeps a second,
    # so each is sized for the load once: 8 MB per shard buys about 4.5 ms of CPU per second,
    # 1.6 times an average tick's need, and the busiest ticks run over their second by a few
    # tenths (docs/DEPLOY.md). With the claim cursor a probe is two queries (the late items
    # and the cursor, then one item past it: takt.store.due `has_due`), twice the CPU a shard,
    # so twice the memory: `bench/probe_cpu.py` measured 0.80 ms a probe without and 1.68 ms
    # with it (docs/CAPACITY.md, "The claim cursor").
    memory_mb_per_due_shard=8,
    memory_mb_per_due_shard_with_cursor=16,
)
CLAIMER = FunctionSpec(
    name="claimer",
    description="takt claimer: claims one (bucket, shard) of the due index and dispatches",
    # One vCPU: a claim spends ~8 ms of CPU per item (docs/CAPACITY.md), which takes 27 ms at
    # 512 MB, and CPU-bound work costs the same per item at any size. With it 64 shards hold the
    # seed's 1,400 executions/s (p99 start lag 1.2 s simulated) where 512 MB needed 128 shards,
    # whose probes double the idle scheduler's cost.
    memory_mb=ONE_VCPU_MEMORY_MB,
    timeout_sec=30,
    # The tenants table holds the dispatch shares its sends take (docs/FAIRNESS.md).
    tables={
        DUE: "read_write",
        JOBS: "read_write",
        EXECUTIONS: "read_write",
        TENANTS: "read_write",
    },
    sends_to_lanes=True,
    async_retries=0,
    # A bounded claim shares its items between tenants by weight, sized by the lanes' drain.
    fairness=(
        *TENANT_LIMITS,
        *FAIR_DISPATCH,
        "claim_max_items",
        "claim_read_pages",
        "fair_queue_sec",
    ),
    measures_lanes=True,
    fenced=True,
)
WORKER = FunctionSpec(
    name="worker",
    description="takt worker: runs executions from the lanes under a lease",
    # A batch of up to 100 runs at once; each message's CPU (lease, completion) waits for the
    # others', and 1,024 MB (0.58 vCPU) starts the hundredth within about a second of the first
    # (docs/CAPACITY.md, "Jobs that take seconds").
    memory_mb=1024,
    timeout_sec=WORKER_TIMEOUT_SEC,
    # The tenants table: running caps and host rate limits, checked before a lease.
    tables={EXECUTIONS: "read_write", JOBS: "read_write", TENANTS: "read_write"},
    sends_to_lanes=True,
    signs_requests=True,
    reads_signing_master=True,
    # Before a lease: the target host's rate and the tenant's running cap.
    fairness=(*TENANT_LIMITS, *FAIR_DISPATCH, "host_rate_limits"),
    fenced=True,
)
WATCHDOG = FunctionSpec(
    name="watchdog",
    description="takt watchdog: puts expired leases and lost messages back on the lanes",
    memory_mb=256,
    timeout_sec=LOOP_TIMEOUT_SEC,
    # A lease that dies on its last attempt records the outcome on the job; a queued run whose
    # overlap slot is free takes it; an expired lease frees its running slot (tenants table,
    # which also holds quarantine records). The reconciler reads the jobs table's `unindexed`
    # markers and puts the due items the indexer did not (takt.dispatch.reconciler). It checks
    # and deletes the claims' watch lists, which live in the due table (takt.store.watches).
    tables={
        EXECUTIONS: "read_write",
        JOBS: "read_write",
        TENANTS: "read_write",
        DUE: "read_write",
    },
    sends_to_lanes=True,
    reserved_concurrency=2,
    async_retries=0,
    # An expired lease frees its running slot, when its tenant has a running cap.
    fairness=(*TENANT_LIMITS, *FAIR_DISPATCH),
    fenced=True,
)
INDEXER = FunctionSpec(
    name="indexer",
    description="takt due indexer: the jobs table's stream to the due index",
    memory_mb=256,
    timeout_sec=30,
    # It reads the jobs table's stream (granted with its event source) and writes due items,
    # clears each job's `unindexed` marker once indexed (jobs table), and parks a record it
    # cannot index in quarantine (tenants table, takt.store.quarantine).
    tables={DUE: "read_write", JOBS: "read_write", TENANTS: "read_write"},
)
SPECS: tuple[FunctionSpec, ...] = (API, SCHEDULER, CLAIMER, WORKER, WATCHDOG, INDEXER)


def timeout_sec(spec: FunctionSpec, drivers: int) -> int:
    """The function's timeout as deployed: its spec's, or for the scheduler the life of its
    `drivers` drivers (infra/driver.py)."""
    return driver_timeout_sec(drivers) if spec is SCHEDULER else spec.timeout_sec


def check_due_cursor(config: DeployConfig, specs: Iterable[FunctionSpec]) -> None:
    """Refuse `dueCursor` unless every due write commits within the late margin.

    An item due at least `due_late_margin_sec` after its writer's clock reading is written where
    a cursor passes (takt.store.due). A cursor passes keys up to a claim's reach ahead of the
    claim's clock, which may disagree with the writer's by two clock margins, so the write must
    commit within the late margin less the reach and the margins, or a cursor may have passed
    its key already and no claim ever reads it. A write commits before its function times out:
    the longest timeout of the due writers, the functions granted writes on the due table (not
    the API, whose jobs' items the indexer puts), must stay below that. The margins and the
    reach are Settings' defaults, which the app leaves as they are, taken as Settings' own
    check of them takes them.
    """
    if not config.tuning.due_cursor:
        return
    writers = [spec for spec in specs if spec.tables.get(DUE) == "read_write"]
    writer = max(writers, key=lambda spec: timeout_sec(spec, config.drivers))
    longest = timeout_sec(writer, config.drivers)
    settings = Settings.model_construct()
    reach = max(settings.dispatch_ahead_sec, settings.burst_ahead_sec + 1.0)
    clocks = 2 * settings.clock_margin_sec
    if longest + reach + clocks >= settings.due_late_margin_sec:
        raise ContextError(
            f"context 'dueCursor=true' needs every due write committed within "
            f"due_late_margin_sec ({settings.due_late_margin_sec:g} s), but the {writer.name} "
            f"function's timeout ({longest} s), a claim's reach ({reach:g} s) and two clock "
            f"margins ({clocks:g} s) come to {longest + reach + clocks:g} s: shorten the "
            "timeout or turn dueCursor off"
        )


def table_env_var(spec: TableSpec) -> str:
    """The variable `takt.config.Settings` reads the table's name from."""
    return settings_env_var(spec.setting)


def takt_environment(
    stack: Stack, tables: Tables, lanes: Lanes, config: DeployConfig
) -> dict[str, str]:
    """What every function and the Fargate worker read: `takt.config.Settings` and Powertools."""
    environment = {table_env_var(spec): tables.name(spec) for spec, _ in tables.all()}
    environment |= config.tuning.environment()
    if config.regions is not None:
        environment |= {
            settings_env_var("regions"): json.dumps(list(config.regions.regions)),
            settings_env_var("region_lease_table"): tables.name(REGIONS),
        }
    environment |= {
        settings_env_var("lane_urls"): stack.to_json_string(
            {lane: pair.queue.queue_url for lane, pair in lanes.lanes.items()}
        ),
        # Settings defaults to us-east-1; the functions must use the stack's region.
        settings_env_var("region"): stack.region,
        settings_env_var("metrics_namespace"): metric_names.NAMESPACE,
        **(
            {settings_env_var("egress_allow"): json.dumps(list(config.egress_allow))}
            if config.egress_allow
            else {}
        ),
        **(
            {settings_env_var("notify_defaults"): config.notify_defaults}
            if config.notify_defaults
            else {}
        ),
        **(
            {
                settings_env_var("oidc_key_id"): config.targets.oidc_key,
                **(
                    {settings_env_var("oidc_issuer"): config.oidc_issuer}
                    if config.oidc_issuer
                    else {}
                ),
            }
            if config.targets.oidc_key
            else {}
        ),
        **(
            config.targets.containers.environment(settings_env_var)
            if config.targets.containers
            else {}
        ),
        "POWERTOOLS_SERVICE_NAME": metric_names.SERVICE,
        "POWERTOOLS_METRICS_NAMESPACE": metric_names.NAMESPACE,
        "LOG_LEVEL": config.log_level,
        # Powertools logs this share of invocations at DEBUG whatever LOG_LEVEL says (decided
        # per invocation in Lambda, once per process in `takt worker`): the worker's "execution
        # received" lines, the claimer's per-claim details, without paying for them every time.
        "POWERTOOLS_LOGGER_SAMPLE_RATE": str(DEBUG_SAMPLE_RATE),
    }
    return environment


# An ARN's partition, region and account as cdk-nag shows them: a token (`<AWS::Region>`) when the
# app is synthesized without an environment, the literal value when the CDK CLI gives it one (it
# always passes a region, and an account when it has credentials). A suppression must match both.
ARN_HEAD = "arn:(<AWS::Partition>|aws[a-z-]*)"
ARN_REGION = "(<AWS::Region>|[a-z]{2}(-[a-z]+)+-[0-9])"
ARN_ACCOUNT = "(<AWS::AccountId>|[0-9]{12})"


def target_secrets_suppression() -> NagPackSuppression:
    """Why a worker role may read every secret under TARGET_SECRET_PREFIX."""
    prefix = TARGET_SECRET_PREFIX.replace("/", "\\/")
    return NagPackSuppression(
        id="AwsSolutions-IAM5",
        reason=(
            "HTTP targets name their secrets (bearer tokens, headers, signing keys) under "
            f"'{TARGET_SECRET_PREFIX}<tenant>/'; the worker reads them at call time and may read "
            "no secret outside that prefix (GetSecretValue only). A secret's ARN ends in six "
            "random characters, so the named signing secret is matched with '-??????'."
        ),
        applies_to=[
            RegexAppliesTo(
                regex=f"/^Resource::{ARN_HEAD}:secretsmanager:{ARN_REGION}:{ARN_ACCOUNT}:"
                f"secret:({prefix}\\*|[^*]*-\\?{{6}})$/g"
            )
        ],
    )


def grant_data_access(
    spec: FunctionSpec, grantee: iam.IGrantable, tables: Tables, lanes: Lanes
) -> None:
    """Grant what `spec` declares: its tables, read or read/write, and sending to the lanes."""
    for table_spec, access in spec.tables.items():
        # "tenant": not the function's own role; the tenant's session of `TenantDataRole` holds it.
        if access != "tenant":
            tables.grant(table_spec, grantee, write=access != "read")
    if spec.fenced:
        tables.grant_lease(grantee)
    if spec.sends_to_lanes:
        for pair in lanes.lanes.values():
            pair.queue.grant_send_messages(grantee)
    if spec.signs_requests:
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["secretsmanager:GetSecretValue"],
            resource_arns=[
                Stack.of(tables).format_arn(
                    service="secretsmanager",
                    resource="secret",
                    resource_name=f"{TARGET_SECRET_PREFIX}*",
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            ],
        )
    if spec.measures_lanes and not spec.reads_stats:
        for pair in lanes.lanes.values():
            pair.queue.grant(grantee, "sqs:GetQueueAttributes")
    if spec.reads_stats:
        for pair in lanes.lanes.values():
            pair.queue.grant(grantee, "sqs:GetQueueAttributes")
            pair.dlq.grant(grantee, "sqs:GetQueueAttributes")
        # GetMetricData has no resource-level permission and no namespace condition key.
        iam.Grant.add_to_principal(
            grantee=grantee, actions=["cloudwatch:GetMetricData"], resource_arns=["*"]
        )


class TaktFunctions(Construct):
    """The functions, with the environment `takt.config.Settings` and Powertools read."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        layer: lambda_.ILayerVersion,
        tables: Tables,
        lanes: Lanes,
        config: DeployConfig,
    ) -> None:
        super().__init__(scope, construct_id)
        environment = takt_environment(Stack.of(self), tables, lanes, config)
        # Kept for the Fargate worker, which must read exactly what the worker function reads
        # (this, and the worker's fairness settings).
        self.environment = dict(environment)
        self.functions: dict[str, lambda_.Function] = {}
        unknown = sorted(set(config.function_memory_mb) - {spec.name for spec in SPECS})
        if unknown:
            raise ContextError(
                f"context 'functionMemoryMb.{unknown[0]}' names no function; they are "
                + ", ".join(spec.name for spec in SPECS)
            )
        check_due_cursor(config, SPECS)
        for spec in SPECS:
            function, role = self._function(
                spec,
                layer,
                environment | config.fairness.environment(spec.fairness),
                config.function_memory_mb.get(
                    spec.name,
                    spec.memory_for(config.tuning.due_shards, due_cursor=config.tuning.due_cursor),
                ),
                config,
            )
            grant_data_access(spec, function, tables, lanes)
            if spec.signs_requests:
                config.targets.grant(function)
            elif spec is WATCHDOG:
                # It ends executions whose worker died, and so may open an incident.
                config.targets.grant_notify(function)
            elif spec is API:
                config.targets.grant_jwks(function)
            if spec.reads_signing_master and config.signing_secret_name:
                # By name: the value is read from Secrets Manager when a key is derived (cached
                # briefly), so it is in neither the template nor the function's configuration.
                function.add_environment(
                    settings_env_var("signing_secret_name"), config.signing_secret_name
                )
                secretsmanager.Secret.from_secret_name_v2(
                    self, f"SigningSecret{spec.name.capitalize()}", config.signing_secret_name
                ).grant_read(function)
            self._suppress_findings(spec, function, role)
            self.functions[spec.name] = function

        self.api = self.functions[API.name]
        self.scheduler = self.functions[SCHEDULER.name]
        self.claimer = self.functions[CLAIMER.name]
        self.worker = self.functions[WORKER.name]
        # The worker runs a whole batch at once: as many threads as the largest lane batch (its
        # clients' connection pools are sized by it, in the Fargate worker too).
        batch = max(tuning.batch_size for tuning in config.lanes.values())
        self.worker.add_environment(settings_env_var("worker_batch_concurrency"), str(batch))
        self.environment[settings_env_var("worker_batch_concurrency")] = str(batch)
        self.watchdog = self.functions[WATCHDOG.name]
        self.indexer = self.functions[INDEXER.name]
        api_role = self.api.role
        assert api_role is not None
        regions = config.regions.regions if config.regions is not None else ()
        self.tenant_data = TenantDataRole(
            self,
            "TenantData",
            tables=tables,
            api_role=api_role,
            other_regions=tuple(r for r in regions if r != Stack.of(self).region),
        )
        # Across regions the API reads which region holds the lease (never writes it), to make
        # changes to existing jobs in that region's replica (takt.api.holder).
        tables.grant_lease_read(api_role)
        # Quarantine records (admin only) are read and cleared with the API's own role, which
        # may reach their partition of the tenants table and nothing else of it.
        api_role.add_to_principal_policy(
            leading_keys_access([(TENANTS, tables.table(TENANTS))], QUARANTINE_PARTITION)
        )
        # Each request's DynamoDB calls go through its tenant's session of this role.
        self.api.add_environment(
            settings_env_var("tenant_data_role_arn"), self.tenant_data.role.role_arn
        )
        self.claimer.grant_invoke(self.scheduler)
        self.scheduler.add_environment(settings_env_var("claimer_mode"), "lambda")
        self.scheduler.add_environment(
            settings_env_var("claimer_function"), self.claimer.function_name
        )
        if config.table_billing is not None and config.regions is None:
            scale_tables_ahead(self.watchdog, tables, config.table_billing, config)
        if config.driver_rest:
            # The indexer starts a driver for a job due before the next minute's driver
            # (takt.dispatch.rest); the drivers end early.
            self.scheduler.grant_invoke(self.indexer)
            self.scheduler.add_environment(settings_env_var("driver_rest"), "true")
            self.indexer.add_environment(settings_env_var("driver_rest"), "true")
            self.indexer.add_environment(
                settings_env_var("scheduler_function"), self.scheduler.function_name
            )

    def _function(
        self,
        spec: FunctionSpec,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        memory_mb: int,
        config: DeployConfig,
    ) -> tuple[lambda_.Function, iam.Role]:
        name = spec.name.capitalize()
        reserved = spec.reserved_concurrency
        if spec is SCHEDULER:
            reserved = driver_concurrency(config.drivers)
        elif spec is CLAIMER:
            reserved = config.claimer_concurrency
        role = iam.Role(
            self,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"takt {spec.name} function",
        )
        log_group = logs.LogGroup(self, f"{name}Logs", retention=LOG_RETENTION)
        log_group.grant_write(role)
        function = lambda_.Function(
            self,
            name,
            description=spec.description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=lambda_.Code.from_asset(
                str(FUNCTIONS_DIR / spec.name), exclude=["__pycache__", "*.pyc"]
            ),
            layers=[layer],
            role=role,
            log_group=log_group,
            memory_size=memory_mb,
            timeout=Duration.seconds(timeout_sec(spec, config.drivers)),
            reserved_concurrent_executions=reserved,
            retry_attempts=spec.async_retries,
            # The shortest age Lambda allows: an invocation a minute late is covered by a newer
            # one, so older queued events are dropped rather than run out of order.
            max_event_age=Duration.minutes(1) if spec.async_retries is not None else None,
            tracing=lambda_.Tracing.ACTIVE if config.tracing else lambda_.Tracing.DISABLED,
            environment=environment,
        )
        return function, role

    def _suppress_findings(
        self, spec: FunctionSpec, function: lambda_.Function, role: iam.Role
    ) -> None:
        """Suppress the cdk-nag findings that least privilege cannot remove, each for a reason.

        Called after the grants, because a suppression reaches only the policies that exist then
        (the scheduler's invoke grant lands later in the same default policy).
        """
        NagSuppressions.add_resource_suppressions(
            function,
            [
                NagPackSuppression(
                    id="AwsSolutions-L1",
                    reason=(
                        "Python 3.13 is deliberate: the project supports 3.11-3.13 "
                        "(requires-python < 3.14) and the layer is built for 3.13; moving to a "
                        "newer runtime is a tested change, not a default."
                    ),
                )
            ],
        )
        unscoped = (
            "X-Ray's PutTraceSegments and PutTelemetryRecords accept no resource-level "
            "permission, so active tracing needs Resource '*'."
        )
        if spec.reads_stats:
            unscoped += (
                " So does CloudWatch's GetMetricData, which the stats route calls for takt's own "
                "metrics (it has no namespace condition key either); it reads, never writes."
            )
        wildcards = [
            NagPackSuppression(id="AwsSolutions-IAM5", reason=unscoped, applies_to=["Resource::*"])
        ]
        if any(table_spec.indexes for table_spec in spec.tables):
            wildcards.append(
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "DynamoDB grants cover a table's indexes as '<table>/index/*': the "
                        "executions table's sparse 'open' index lets readers find the executions "
                        "that need action without a scan."
                    ),
                    applies_to=[RegexAppliesTo(regex="/^Resource::.*\\/index\\/\\*$/g")],
                )
            )
        if spec.signs_requests:
            wildcards.append(target_secrets_suppression())
            wildcards.extend(container_suppressions())
        if spec is SCHEDULER:
            wildcards.append(
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "grant_invoke names the claimer and '<claimer>:*' (its versions and "
                        "aliases): the scheduler may invoke the claimer and nothing else."
                    ),
                    applies_to=[RegexAppliesTo(regex="/^Resource::<.*Claimer.*>:\\*$/g")],
                )
            )
        if spec is INDEXER:
            wildcards.append(
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "With driverRest, grant_invoke names the scheduler and '<scheduler>:*' "
                        "(its versions and aliases): the indexer may start a driver and invoke "
                        "nothing else."
                    ),
                    applies_to=[RegexAppliesTo(regex="/^Resource::<.*Scheduler.*>:\\*$/g")],
                )
            )
        NagSuppressions.add_resource_suppressions(role, wildcards, apply_to_children=True)
