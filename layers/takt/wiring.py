"""Builds takt's services from settings and clients, once per process.

Handlers call `services()`; the local runtime and the tests build their own `Services` with
`build_services`, against moto, and may pass a clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Protocol

import boto3

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
from takt.config import Settings, get_settings
from takt.dispatch.ahead import DueForecaster, FleetPlan, ScaleAhead
from takt.dispatch.claimer import Claimer, ClaimResult
from takt.dispatch.driver import Driver
from takt.dispatch.indexer import DueIndexer
from takt.dispatch.lanes import LaneSender
from takt.dispatch.ticker import Fanout, InlineFanout, LambdaFanout, Ticker
from takt.fairness.adaptive import LaneGauge
from takt.fairness.gate import WorkerGate, running_check
from takt.fairness.shares import DispatchShares
from takt.handlers import load_modules, registry
from takt.notify.notifier import Notifier
from takt.stats import CloudWatchMetricsReader, MetricsReader
from takt.store.buckets import TokenBuckets
from takt.store.calendars import CalendarStore
from takt.store.due import DueStore
from takt.store.executions import ExecutionStore
from takt.store.idempotency import IdempotencyStore
from takt.store.jobs import JobStore
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
from takt.tenants.sessions import TenantSessions
from takt.tenants.webhook_keys import WebhookKeys
from takt.watchdog.sweeper import Watchdog
from takt.worker.runner import ExecutionRunner

DAY = 24 * 3600
ClaimCall = Callable[[datetime, int, datetime], ClaimResult]


class Instrument(ClientObserver, Protocol):
    """What `takt bench` hooks into the services it builds (takt_cli.metering.Meter): it
    observes the clients' requests and wraps each inline claim to time it."""

    def metered_claim(self, claim: ClaimCall) -> ClaimCall: ...


MAX_TENANT_SESSIONS = 64


@dataclass
class Services:
    settings: Settings
    clients: AwsClients
    clock: Clock
    # Where the stats route reads the last hour's metrics: None means CloudWatch; `takt local`
    # passes its in-memory window, since nothing publishes to CloudWatch there.
    metrics_source: MetricsReader | None = None
    # Set by `takt bench`: the clients report to it, and each inline claim is timed as one
    # claimer invocation, as the cloud's LambdaFanout would invoke it.
    meter: Instrument | None = None
    _tenant_scoped: dict[str, tuple[datetime, Services]] = field(
        default_factory=dict, init=False, repr=False
    )
    _tenant_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def for_tenant(self, tenant_id: str) -> Services:
        """The services one tenant's API request uses: with `tenant_data_role_arn` set, their
        DynamoDB calls go through that tenant's own session (`takt.tenants.sessions`), so IAM
        confines them to its items; without it, these services."""
        role_arn = self.settings.tenant_data_role_arn
        if role_arn is None:
            return self
        with self._tenant_lock:
            renew_at, scoped = self._tenant_scoped.pop(tenant_id, (None, None))
            if scoped is None or renew_at is None or self.clock.now() >= renew_at:
                session = self.tenant_sessions.open(tenant_id, self.clock.now())
                scoped = Services(
                    self.settings,
                    replace(self.clients, dynamodb=session.dynamodb),
                    self.clock,
                    self.metrics_source,
                    self.meter,
                )
                renew_at = session.renew_at
            # Most recently used last; one function instance keeps the sessions of at most
            # MAX_TENANT_SESSIONS tenants (each holds a client), dropping the least recent.
            self._tenant_scoped[tenant_id] = (renew_at, scoped)
            while len(self._tenant_scoped) > MAX_TENANT_SESSIONS:
                del self._tenant_scoped[next(iter(self._tenant_scoped))]
            return scoped

    @cached_property
    def tenant_sessions(self) -> TenantSessions:
        assert self.settings.tenant_data_role_arn is not None
        return TenantSessions(
            self.settings, make_sts_client(self.settings), self.settings.tenant_data_role_arn
        )

    @cached_property
    def metrics_reader(self) -> MetricsReader:
        if self.metrics_source is not None:
            return self.metrics_source
        return CloudWatchMetricsReader(
            make_cloudwatch_client(self.settings), self.settings.metrics_namespace
        )

    @cached_property
    def jobs(self) -> JobStore:
        return JobStore(self.clients.dynamodb, self.settings.jobs_table)

    @cached_property
    def due(self) -> DueStore:
        return DueStore(self.clients.dynamodb, self.settings.due_table, self.settings.due_shards)

    @cached_property
    def executions(self) -> ExecutionStore:
        return ExecutionStore(
            self.clients.dynamodb,
            self.settings.executions_table,
            self.settings.open_shards,
            int(self.settings.history_retention_days * DAY),
        )

    @cached_property
    def idempotency(self) -> IdempotencyStore:
        return IdempotencyStore(
            self.clients.dynamodb,
            self.settings.idempotency_table,
            int(self.settings.idempotency_retention_days * DAY),
        )

    @cached_property
    def buckets(self) -> TokenBuckets:
        return TokenBuckets(self.clients.dynamodb, self.settings.tenants_table)

    @cached_property
    def gate(self) -> WorkerGate:
        return WorkerGate(
            self.settings,
            self.buckets,
            RunningSlots(self.clients.dynamodb, self.settings.tenants_table),
            self.clock,
            running_check(self.executions),
        )

    @cached_property
    def lanes(self) -> LaneSender:
        route = None
        if self.settings.fair_dispatch_per_sec is not None:
            route = DispatchShares(self.settings, self.buckets, self.clock).route
        return LaneSender(self.clients.sqs, self.settings, route)

    @cached_property
    def limiter(self) -> TenantLimiter:
        return TenantLimiter(
            self.clients.dynamodb, self.settings, self.settings.jobs_table, self.buckets
        )

    @cached_property
    def quarantine(self) -> QuarantineStore:
        return QuarantineStore(self.clients.dynamodb, self.settings.tenants_table)

    @cached_property
    def indexer(self) -> DueIndexer:
        return DueIndexer(self.due, self.clock)

    @cached_property
    def calendars(self) -> CalendarStore:
        return CalendarStore(self.clients.dynamodb, self.settings.tenants_table)

    @cached_property
    def claimer(self) -> Claimer:
        gauge = None
        if self.settings.claim_max_items is not None and self.settings.fair_queue_sec is not None:
            gauge = LaneGauge(self.clients.sqs, self.settings.lane_urls)
        return Claimer(
            self.settings,
            self.jobs,
            self.due,
            self.executions,
            self.lanes,
            self.calendars,
            gauge,
            self.quarantine,
        )

    @cached_property
    def fanout(self) -> Fanout:
        if self.settings.claimer_mode == "lambda":
            if not self.settings.claimer_function:
                raise RuntimeError("TAKT_CLAIMER_FUNCTION is required in lambda claimer mode")
            client = boto3.session.Session(region_name=self.settings.region).client("lambda")
            ahead = timedelta(seconds=self.settings.dispatch_ahead_sec)
            return LambdaFanout(
                client,
                self.settings.claimer_function,
                lambda task: self.due.has_due(task.minute, task.shard, task.now + ahead),
                self.settings.claimer_threads,
            )
        claim: Callable[[datetime, int, datetime], ClaimResult] = self.claimer.claim
        if self.meter is not None:
            claim = self.meter.metered_claim(claim)
        return InlineFanout(claim, self.settings.claimer_threads)

    @cached_property
    def ticker(self) -> Ticker:
        return Ticker(
            self.due,
            self.fanout,
            self.settings.max_catchup_buckets,
            timedelta(seconds=self.settings.dispatch_ahead_sec),
        )

    @cached_property
    def webhook_keys(self) -> WebhookKeys:
        """Each tenant's signing keys, derived from the deployment's master secret: by name from
        Secrets Manager, else the plain value (local use), else none (nothing is signed)."""
        settings = self.settings
        source = SecretsManagerSource(
            lambda: make_secrets_client(settings), settings.secret_cache_sec
        )

        def master() -> str | None:
            if settings.signing_secret_name is not None:
                return source.get(settings.signing_secret_name)
            return settings.signing_secret

        return WebhookKeys(
            self.clients.dynamodb, settings.tenants_table, master, settings.secret_cache_sec
        )

    @cached_property
    def driver(self) -> Driver:
        return Driver(self.due, self.ticker, self.clock)

    @cached_property
    def http(self) -> HttpTarget:
        """HTTP targets and webhook notifications: the egress policy, secrets and signing."""
        settings = self.settings
        return HttpTarget(
            EgressPolicy(settings.egress_allow),
            SecretsManagerSource(lambda: make_secrets_client(settings), settings.secret_cache_sec),
            tenant_keys=lambda tenant_id: self.webhook_keys.signing_keys(
                tenant_id, self.clock.now()
            ),
            secret_prefix=settings.secret_prefix,
            credentials=credential_source(settings),
            tokens=self.oidc,
        )

    @cached_property
    def oidc(self) -> OidcSigner | None:
        """The OIDC token signer, when the deployment names a KMS key for it."""
        settings = self.settings
        if settings.oidc_key_id is None:
            return None
        return OidcSigner(
            lambda: make_kms_client(settings), settings.oidc_key_id, settings.oidc_issuer
        )

    @cached_property
    def notifier(self) -> Notifier:
        return Notifier(self.settings, self.jobs, self.http, self.clients.sns, self.clients.events)

    @cached_property
    def targets(self) -> TargetRouter:
        """Every target kind, with the handlers of `handler_modules` (imported here, once)."""
        load_modules(self.settings.handler_module_names)
        settings = self.settings
        return TargetRouter(
            self.http,
            QueueTopicTarget(
                self.clients.sqs, self.clients.sns, self.clients.events, self.settings.region
            ),
            registry,
            AwsInvokeTarget(
                lambda timeout: make_lambda_client(settings, timeout),
                lambda: make_states_client(settings),
                settings.region,
            ),
        )

    @cached_property
    def runner(self) -> ExecutionRunner:
        return ExecutionRunner(
            self.settings,
            self.jobs,
            self.executions,
            self.lanes,
            self.targets,
            self.clock,
            gate=self.gate,
            notifier=self.notifier,
        )

    @cached_property
    def scale_ahead(self) -> ScaleAhead:
        settings = self.settings
        return ScaleAhead(
            DueForecaster(self.due, settings.scale_ahead_minutes, settings.scale_ahead_count_pages),
            FleetPlan(
                job_sec=settings.scale_ahead_job_sec,
                slots=settings.fargate_slots,
                min_tasks=settings.fargate_min_tasks,
                max_tasks=settings.fargate_max_tasks,
            ),
            make_autoscaling_client(settings) if settings.fargate_service else None,
            settings.fargate_service,
        )

    @cached_property
    def watchdog(self) -> Watchdog:
        return Watchdog(
            self.settings,
            self.jobs,
            self.executions,
            self.lanes,
            release_slot=self.gate.release,
            notifier=self.notifier,
            quarantine=self.quarantine,
        )


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
