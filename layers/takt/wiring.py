"""Builds each Lambda function's parts from settings and clients, once per process.

One builder per function (`build_api`, `build_worker`, `build_scheduler`, `build_claimer`,
`build_watchdog`, `build_indexer`) constructs only what that function uses, and hands each part
the settings it reads. The handlers take their function's parts from the process-wide `Services`
(`services()`), which builds a function's parts the first time that function asks for them, so a
deployed function builds nothing of the others. The local runtime and the tests run every
function in one process: they build a `Services` of their own, against moto, with a clock of
their choice, and `install` it for the handlers; its parts come from the same builders.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

import boto3

from takt.api.identity import IdentityMapping
from takt.api.parts import Api, ApiSettings, TenantData
from takt.aws import (
    AwsClients,
    ClientObserver,
    credential_source,
    make_autoscaling_client,
    make_clients,
    make_cloudwatch_client,
    make_kms_client,
    make_lambda_client,
    make_secrets_client,
    make_states_client,
    make_sts_client,
)
from takt.clock import Clock, SystemClock
from takt.config import Settings, get_settings, settings_slice
from takt.dispatch.ahead import DueForecaster, FleetPlan, ScaleAhead
from takt.dispatch.claimer import Claimer, ClaimerSettings, ClaimResult, claim_horizon
from takt.dispatch.driver import Driver
from takt.dispatch.indexer import DueIndexer
from takt.dispatch.lanes import LaneSender
from takt.dispatch.reconciler import Reconciler
from takt.dispatch.ticker import Fanout, InlineFanout, LambdaFanout, Ticker
from takt.executions.lifecycle import Lifecycle
from takt.fairness.adaptive import LaneGauge
from takt.fairness.gate import WorkerGate, running_check
from takt.fairness.shares import DispatchShares
from takt.handlers import load_modules, registry
from takt.notify.notifier import Notifier
from takt.stats import CloudWatchMetricsReader, MetricsReader, lane_depths
from takt.store.backfills import BackfillStore
from takt.store.buckets import TokenBuckets
from takt.store.calendars import CalendarStore
from takt.store.due import DueStore
from takt.store.executions import ExecutionStore
from takt.store.idempotency import IdempotencyStore
from takt.store.jobs import JobStore
from takt.store.names import JobNames
from takt.store.quarantine import QuarantineStore
from takt.store.running import RunningSlots
from takt.targets.egress import EgressPolicy
from takt.targets.http import HttpTarget
from takt.targets.invoke import AwsInvokeTarget
from takt.targets.oidc import OidcSigner
from takt.targets.publish import QueueTopicTarget
from takt.targets.router import TargetRouter
from takt.targets.secrets import SecretsManagerSource
from takt.tenants import TenantLimiter
from takt.tenants.sessions import PerTenant, TenantSessions
from takt.tenants.webhook_keys import WebhookKeys
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.worker.runner import ExecutionRunner, RunnerSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DAY = 24 * 3600
ClaimCall = Callable[[datetime, int, datetime], ClaimResult]


class Instrument(ClientObserver, Protocol):
    """What `takt bench` hooks into the services it builds (takt_cli.metering.Meter): it
    observes the clients' requests and wraps each inline claim to time it."""

    def metered_claim(self, claim: ClaimCall) -> ClaimCall: ...


# The stores and adapters, each made the one way every builder makes it.


def job_store(settings: Settings, dynamodb: DynamoDBClient) -> JobStore:
    return JobStore(dynamodb, settings.jobs_table)


def due_store(settings: Settings, dynamodb: DynamoDBClient) -> DueStore:
    return DueStore(dynamodb, settings.due_table, settings.due_shards)


def execution_store(settings: Settings, dynamodb: DynamoDBClient) -> ExecutionStore:
    return ExecutionStore(
        dynamodb,
        settings.executions_table,
        settings.open_shards,
        int(settings.history_retention_days * DAY),
    )


def idempotency_store(settings: Settings, dynamodb: DynamoDBClient) -> IdempotencyStore:
    return IdempotencyStore(
        dynamodb, settings.idempotency_table, int(settings.idempotency_retention_days * DAY)
    )


def calendar_store(settings: Settings, dynamodb: DynamoDBClient) -> CalendarStore:
    return CalendarStore(dynamodb, settings.tenants_table)


def quarantine_store(settings: Settings, dynamodb: DynamoDBClient) -> QuarantineStore:
    return QuarantineStore(dynamodb, settings.tenants_table)


def token_buckets(settings: Settings, dynamodb: DynamoDBClient) -> TokenBuckets:
    return TokenBuckets(dynamodb, settings.tenants_table)


def tenant_limiter(
    settings: Settings, dynamodb: DynamoDBClient, buckets: TokenBuckets
) -> TenantLimiter:
    return TenantLimiter(dynamodb, settings, settings.jobs_table, buckets)


def lane_sender(
    settings: Settings, clients: AwsClients, clock: Clock, buckets: TokenBuckets
) -> LaneSender:
    """The lanes, with weighted fair dispatch when the deployment turns it on."""
    route = None
    if settings.fair_dispatch_per_sec is not None:
        route = DispatchShares(settings, buckets, clock).route
    return LaneSender(clients.sqs, settings, route)


def worker_gate(
    settings: Settings,
    dynamodb: DynamoDBClient,
    clock: Clock,
    buckets: TokenBuckets,
    executions: ExecutionStore,
) -> WorkerGate:
    return WorkerGate(
        settings,
        buckets,
        RunningSlots(dynamodb, settings.tenants_table),
        clock,
        running_check(executions),
    )


def webhook_keys(settings: Settings, dynamodb: DynamoDBClient) -> WebhookKeys:
    """Each tenant's signing keys, derived from the deployment's master secret: by name from
    Secrets Manager, else the plain value (local use), else none (nothing is signed)."""
    source = SecretsManagerSource(lambda: make_secrets_client(settings), settings.secret_cache_sec)

    def master() -> str | None:
        if settings.signing_secret_name is not None:
            return source.get(settings.signing_secret_name)
        return settings.signing_secret

    return WebhookKeys(dynamodb, settings.tenants_table, master, settings.secret_cache_sec)


def oidc_signer(settings: Settings) -> OidcSigner | None:
    """The OIDC token signer, when the deployment names a KMS key for it."""
    if settings.oidc_key_id is None:
        return None
    return OidcSigner(lambda: make_kms_client(settings), settings.oidc_key_id, settings.oidc_issuer)


def http_target(
    settings: Settings, clock: Clock, keys: WebhookKeys, oidc: OidcSigner | None
) -> HttpTarget:
    """HTTP targets and webhook notifications: the egress policy, secrets and signing."""
    return HttpTarget(
        EgressPolicy(settings.egress_allow),
        SecretsManagerSource(lambda: make_secrets_client(settings), settings.secret_cache_sec),
        tenant_keys=lambda tenant_id: keys.signing_keys(tenant_id, clock.now()),
        secret_prefix=settings.secret_prefix,
        credentials=credential_source(settings),
        tokens=oidc,
    )


def target_router(settings: Settings, clients: AwsClients, http: HttpTarget) -> TargetRouter:
    """Every target kind, with the handlers of `handler_modules` (imported here, once)."""
    load_modules(settings.handler_module_names)
    return TargetRouter(
        http,
        QueueTopicTarget(clients.sqs, clients.sns, clients.events, settings.region),
        registry,
        AwsInvokeTarget(
            lambda timeout: make_lambda_client(settings, timeout),
            lambda: make_states_client(settings),
            settings.region,
        ),
    )


def notifier(settings: Settings, clients: AwsClients, jobs: JobStore, http: HttpTarget) -> Notifier:
    return Notifier(settings, jobs, http, clients.sns, clients.events)


# One builder per function.


@dataclass(frozen=True)
class WorkerFunction:
    runner: ExecutionRunner
    # How many of a batch's messages run at once, and how long before the function's own
    # timeout an unfinished execution is given back.
    batch_concurrency: int
    give_back_margin_sec: float


def build_worker(settings: Settings, clients: AwsClients, clock: Clock) -> WorkerFunction:
    jobs = job_store(settings, clients.dynamodb)
    executions = execution_store(settings, clients.dynamodb)
    buckets = token_buckets(settings, clients.dynamodb)
    http = http_target(
        settings, clock, webhook_keys(settings, clients.dynamodb), oidc_signer(settings)
    )
    runner = ExecutionRunner(
        RunnerSettings.of(settings),
        jobs,
        executions,
        lane_sender(settings, clients, clock, buckets),
        target_router(settings, clients, http),
        clock,
        gate=worker_gate(settings, clients.dynamodb, clock, buckets, executions),
        notifier=notifier(settings, clients, jobs, http),
    )
    return WorkerFunction(runner, settings.worker_batch_concurrency, settings.give_back_margin_sec)


@dataclass(frozen=True)
class ClaimerFunction:
    claimer: Claimer
    clock: Clock


def build_claimer(settings: Settings, clients: AwsClients, clock: Clock) -> ClaimerFunction:
    gauge = None
    if settings.claim_max_items is not None and settings.fair_queue_sec is not None:
        gauge = LaneGauge(clients.sqs, settings.lane_urls)
    claimer = Claimer(
        ClaimerSettings.of(settings),
        job_store(settings, clients.dynamodb),
        due_store(settings, clients.dynamodb),
        execution_store(settings, clients.dynamodb),
        lane_sender(settings, clients, clock, token_buckets(settings, clients.dynamodb)),
        calendar_store(settings, clients.dynamodb),
        gauge,
        quarantine_store(settings, clients.dynamodb),
    )
    return ClaimerFunction(claimer, clock)


@dataclass(frozen=True)
class SchedulerFunction:
    due: DueStore
    ticker: Ticker
    driver: Driver


def build_scheduler(
    settings: Settings,
    clients: AwsClients,
    clock: Clock,
    meter: Instrument | None = None,
    claimer: Claimer | None = None,
) -> SchedulerFunction:
    """The per-second driver and its ticker. Inline, the ticker claims in this process (with
    `claimer`, or one of its own); in lambda mode it invokes the claimer function per partition
    that has something due."""
    due = due_store(settings, clients.dynamodb)
    ahead = timedelta(seconds=settings.dispatch_ahead_sec)
    horizon = ClaimerSettings.of(settings)
    fanout: Fanout
    if settings.claimer_mode == "lambda":
        if not settings.claimer_function:
            raise RuntimeError("TAKT_CLAIMER_FUNCTION is required in lambda claimer mode")
        fanout = LambdaFanout(
            boto3.session.Session(region_name=settings.region).client("lambda"),
            settings.claimer_function,
            lambda task: due.has_due(
                task.minute, task.shard, claim_horizon(horizon, task.minute, task.now)
            ),
            settings.claimer_threads,
        )
    else:
        claim: ClaimCall = (claimer or build_claimer(settings, clients, clock).claimer).claim
        if meter is not None:
            claim = meter.metered_claim(claim)
        fanout = InlineFanout(claim, settings.claimer_threads)
    burst_ahead = timedelta(seconds=settings.burst_ahead_sec)
    ticker = Ticker(due, fanout, settings.max_catchup_buckets, ahead, burst_ahead)
    return SchedulerFunction(due, ticker, Driver(due, ticker, clock))


@dataclass(frozen=True)
class WatchdogFunction:
    watchdog: Watchdog
    clock: Clock
    interval_sec: float
    # The minute's step that sizes the Fargate worker service ahead of the due index, when the
    # deployment turns it on (`scale_ahead_minutes`).
    scale_ahead: ScaleAhead | None = None
    # The repair of jobs the indexer did not index, once an invocation.
    reconciler: Reconciler | None = None


def build_watchdog(settings: Settings, clients: AwsClients, clock: Clock) -> WatchdogFunction:
    jobs = job_store(settings, clients.dynamodb)
    executions = execution_store(settings, clients.dynamodb)
    buckets = token_buckets(settings, clients.dynamodb)
    http = http_target(
        settings, clock, webhook_keys(settings, clients.dynamodb), oidc_signer(settings)
    )
    watchdog = Watchdog(
        WatchdogSettings.of(settings),
        jobs,
        due_store(settings, clients.dynamodb),
        executions,
        lane_sender(settings, clients, clock, buckets),
        release_slot=worker_gate(settings, clients.dynamodb, clock, buckets, executions).release,
        notifier=notifier(settings, clients, jobs, http),
        quarantine=quarantine_store(settings, clients.dynamodb),
    )
    return WatchdogFunction(
        watchdog,
        clock,
        settings.watchdog_interval_sec,
        scale_ahead(settings, clients),
        build_reconciler(settings, clients),
    )


def scale_ahead(settings: Settings, clients: AwsClients) -> ScaleAhead | None:
    """What falls due in the next minutes, and the Fargate worker service sized for it."""
    if settings.scale_ahead_minutes <= 0:
        return None
    return ScaleAhead(
        DueForecaster(
            due_store(settings, clients.dynamodb),
            settings.scale_ahead_minutes,
            settings.scale_ahead_count_pages,
        ),
        FleetPlan(
            job_sec=settings.scale_ahead_job_sec,
            slots=settings.fargate_slots,
            min_tasks=settings.fargate_min_tasks,
            max_tasks=settings.fargate_max_tasks,
        ),
        make_autoscaling_client(settings) if settings.fargate_service else None,
        settings.fargate_service,
    )


def build_indexer(settings: Settings, clients: AwsClients, clock: Clock) -> DueIndexer:
    return DueIndexer(
        due_store(settings, clients.dynamodb),
        clock,
        job_store(settings, clients.dynamodb),
        quarantine_store(settings, clients.dynamodb),
    )


def build_reconciler(settings: Settings, clients: AwsClients) -> Reconciler:
    """The watchdog's repair of jobs the indexer did not index (takt.dispatch.reconciler)."""
    return Reconciler(
        job_store(settings, clients.dynamodb),
        due_store(settings, clients.dynamodb),
        settings.reindex_grace_sec,
        quarantine_store(settings, clients.dynamodb),
    )


def build_api(
    settings: Settings,
    clients: AwsClients,
    clock: Clock,
    metrics: MetricsReader | None = None,
) -> Api:
    """The API's parts. `metrics` is where the stats route reads the last hour: None means
    CloudWatch; `takt local` passes its in-memory window, since nothing publishes there."""

    def over(dynamodb: DynamoDBClient) -> TenantData:
        return _tenant_data(settings, clients, clock, dynamodb)

    tenant: Callable[[str], TenantData]
    if settings.tenant_data_role_arn is None:
        shared = over(clients.dynamodb)
        tenant = lambda _tenant_id: shared  # noqa: E731 - every tenant uses the function's role
    else:
        sessions = TenantSessions(
            settings, make_sts_client(settings), settings.tenant_data_role_arn
        )
        tenant = PerTenant(sessions, over, clock).get

    @functools.cache
    def reader() -> MetricsReader:
        if metrics is not None:
            return metrics
        return CloudWatchMetricsReader(make_cloudwatch_client(settings), settings.metrics_namespace)

    return Api(
        settings=settings_slice(ApiSettings, settings),
        identity=IdentityMapping.of(settings),
        clock=clock,
        tenant=tenant,
        metrics=reader,
        lane_depths=lambda: lane_depths(clients.sqs, settings.lane_urls),
        oidc=oidc_signer(settings),
        quarantine=quarantine_store(settings, clients.dynamodb),
    )


def _tenant_data(
    settings: Settings, clients: AwsClients, clock: Clock, dynamodb: DynamoDBClient
) -> TenantData:
    """What the API uses of one tenant's tables, over `dynamodb` (the tenant's own session,
    or the function's)."""
    jobs = job_store(settings, dynamodb)
    executions = execution_store(settings, dynamodb)
    buckets = token_buckets(settings, dynamodb)
    lanes = lane_sender(settings, clients, clock, buckets)
    return TenantData(
        jobs=jobs,
        executions=executions,
        idempotency=idempotency_store(settings, dynamodb),
        calendars=calendar_store(settings, dynamodb),
        names=JobNames(dynamodb, settings.tenants_table),
        limiter=tenant_limiter(settings, dynamodb, buckets),
        buckets=buckets,
        webhook_keys=webhook_keys(settings, dynamodb),
        lanes=lanes,
        lifecycle=Lifecycle(settings, jobs, executions, lanes),
        backfill_store=BackfillStore(dynamodb, settings.tenants_table),
    )


@dataclass
class Services:
    """Every function's parts in one process, each built by its function's builder on first
    use: what the handlers read (`services()`), and what the local runtime and the tests build
    against moto. The stores and adapters below are the tests' way into the same tables."""

    settings: Settings
    clients: AwsClients
    clock: Clock
    # Where the stats route reads the last hour's metrics: None means CloudWatch; `takt local`
    # passes its in-memory window, since nothing publishes to CloudWatch there.
    metrics_source: MetricsReader | None = None
    # Set by `takt bench`: the clients report to it, and each inline claim is timed as one
    # claimer invocation, as the cloud's LambdaFanout would invoke it.
    meter: Instrument | None = None

    # The functions.

    @cached_property
    def api(self) -> Api:
        return build_api(self.settings, self.clients, self.clock, self.metrics_source)

    @cached_property
    def worker_function(self) -> WorkerFunction:
        return build_worker(self.settings, self.clients, self.clock)

    @cached_property
    def claimer_function(self) -> ClaimerFunction:
        return build_claimer(self.settings, self.clients, self.clock)

    @cached_property
    def scheduler_function(self) -> SchedulerFunction:
        # In one process the inline ticker claims with this process's claimer.
        claimer = self.claimer if self.settings.claimer_mode == "inline" else None
        return build_scheduler(self.settings, self.clients, self.clock, self.meter, claimer)

    @cached_property
    def watchdog_function(self) -> WatchdogFunction:
        return build_watchdog(self.settings, self.clients, self.clock)

    @property
    def reconciler(self) -> Reconciler:
        reconciler = self.watchdog_function.reconciler
        assert reconciler is not None
        return reconciler

    @cached_property
    def indexer(self) -> DueIndexer:
        return build_indexer(self.settings, self.clients, self.clock)

    @property
    def runner(self) -> ExecutionRunner:
        return self.worker_function.runner

    @property
    def claimer(self) -> Claimer:
        return self.claimer_function.claimer

    @property
    def ticker(self) -> Ticker:
        return self.scheduler_function.ticker

    @property
    def driver(self) -> Driver:
        return self.scheduler_function.driver

    @property
    def watchdog(self) -> Watchdog:
        return self.watchdog_function.watchdog

    # The tables and adapters, for the tests.

    @cached_property
    def jobs(self) -> JobStore:
        return job_store(self.settings, self.clients.dynamodb)

    @cached_property
    def due(self) -> DueStore:
        return due_store(self.settings, self.clients.dynamodb)

    @cached_property
    def executions(self) -> ExecutionStore:
        return execution_store(self.settings, self.clients.dynamodb)

    @cached_property
    def idempotency(self) -> IdempotencyStore:
        return idempotency_store(self.settings, self.clients.dynamodb)

    @cached_property
    def calendars(self) -> CalendarStore:
        return calendar_store(self.settings, self.clients.dynamodb)

    @cached_property
    def quarantine(self) -> QuarantineStore:
        return quarantine_store(self.settings, self.clients.dynamodb)

    @cached_property
    def buckets(self) -> TokenBuckets:
        return token_buckets(self.settings, self.clients.dynamodb)

    @cached_property
    def limiter(self) -> TenantLimiter:
        return tenant_limiter(self.settings, self.clients.dynamodb, self.buckets)

    @cached_property
    def lanes(self) -> LaneSender:
        return lane_sender(self.settings, self.clients, self.clock, self.buckets)

    @cached_property
    def gate(self) -> WorkerGate:
        return worker_gate(
            self.settings, self.clients.dynamodb, self.clock, self.buckets, self.executions
        )

    @cached_property
    def webhook_keys(self) -> WebhookKeys:
        return webhook_keys(self.settings, self.clients.dynamodb)

    @cached_property
    def oidc(self) -> OidcSigner | None:
        return oidc_signer(self.settings)

    @cached_property
    def http(self) -> HttpTarget:
        return http_target(self.settings, self.clock, self.webhook_keys, self.oidc)

    @cached_property
    def targets(self) -> TargetRouter:
        return target_router(self.settings, self.clients, self.http)

    @cached_property
    def notifier(self) -> Notifier:
        return notifier(self.settings, self.clients, self.jobs, self.http)


def build_services(
    settings: Settings,
    clock: Clock | None = None,
    metrics: MetricsReader | None = None,
    meter: Instrument | None = None,
) -> Services:
    return Services(
        settings=settings,
        clients=make_clients(settings, meter=meter),
        clock=clock or SystemClock(),
        metrics_source=metrics,
        meter=meter,
    )


_lock = threading.Lock()
_services: Services | None = None


def services() -> Services:
    """The process-wide services, built on first use (never at import time)."""
    global _services  # noqa: PLW0603 - one container per process is the point
    with _lock:
        if _services is None:
            _services = build_services(get_settings())
        return _services


def install(instance: Services | None) -> None:
    """Replace the process-wide services (the local runtime and tests do this)."""
    global _services  # noqa: PLW0603
    with _lock:
        _services = instance
