"""Builds each Lambda function's parts from settings and clients, once per process.

One builder per function, each in its own module (`takt.wiring.api`, `.worker`, `.claimer`,
`.scheduler`, `.watchdog`, `.indexer`), constructs only what that function uses, and hands each
part the settings it reads. The handlers take their function's parts from the process-wide
`Services` (`services()`), which imports and runs a function's builder the first time that
function asks for its parts. So a deployed function neither builds nor imports the others' parts:
its cold start pays only for what it runs, and no function but the API imports `takt.api`
(tests/packaging/test_handler_imports.py holds it). The local runtime and the tests run every
function in one process: they build a `Services` of their own, against moto, with a clock of
their choice, and `install` it for the handlers; its parts come from the same builders.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from takt.aws import AwsClients, make_clients
from takt.clock import Clock, SystemClock
from takt.config import Settings, get_settings
from takt.store.buckets import TokenBuckets
from takt.store.calendars import CalendarStore
from takt.store.due import DueStore
from takt.store.executions import ExecutionStore
from takt.store.idempotency import IdempotencyStore
from takt.store.jobs import JobStore
from takt.store.quarantine import QuarantineStore
from takt.wiring.stores import (
    calendar_store,
    due_store,
    execution_store,
    idempotency_store,
    job_store,
    quarantine_store,
    token_buckets,
)

if TYPE_CHECKING:
    from takt.api.dependencies import Api
    from takt.dispatch.claimer import Claimer
    from takt.dispatch.driver import Driver
    from takt.dispatch.indexer import DueIndexer
    from takt.dispatch.lanes import LaneSender
    from takt.dispatch.reconciler import Reconciler
    from takt.dispatch.ticker import Ticker
    from takt.fairness.gate import WorkerGate
    from takt.models.regions import Unfenced
    from takt.notify.notifier import Notifier
    from takt.regions.fence import RegionFence
    from takt.stats import MetricsReader
    from takt.targets.http import HttpTarget
    from takt.targets.oidc import OidcSigner
    from takt.targets.router import TargetRouter
    from takt.tenants import TenantLimiter
    from takt.tenants.webhook_keys import WebhookKeys
    from takt.watchdog.sweeper import Watchdog
    from takt.wiring.claimer import ClaimerFunction
    from takt.wiring.scheduler import Instrument, SchedulerFunction
    from takt.wiring.watchdog import WatchdogFunction
    from takt.wiring.worker import WorkerFunction
    from takt.worker.runner import ExecutionRunner


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

    # The region fence every acting path of this process shares (one proof, renewed at most
    # once per `region_renew_sec`), measured on the clock's monotonic time when it has one
    # (a test's ManualClock), else the process's.

    @cached_property
    def fence(self) -> RegionFence | Unfenced:
        from takt.wiring.regions import region_fence

        monotonic = getattr(self.clock, "monotonic", time.monotonic)
        return region_fence(self.settings, monotonic)

    # The functions.

    @cached_property
    def api(self) -> Api:
        from takt.wiring.api import build_api

        return build_api(self.settings, self.clients, self.clock, self.metrics_source)

    @cached_property
    def worker_function(self) -> WorkerFunction:
        from takt.wiring.worker import build_worker

        return build_worker(self.settings, self.clients, self.clock, self.fence)

    @cached_property
    def claimer_function(self) -> ClaimerFunction:
        from takt.wiring.claimer import build_claimer

        return build_claimer(self.settings, self.clients, self.clock, self.fence)

    @cached_property
    def scheduler_function(self) -> SchedulerFunction:
        from takt.wiring.scheduler import build_scheduler

        # In one process the inline ticker claims with this process's claimer.
        claimer = self.claimer if self.settings.claimer_mode == "inline" else None
        return build_scheduler(
            self.settings, self.clients, self.clock, self.meter, claimer, self.fence
        )

    @cached_property
    def watchdog_function(self) -> WatchdogFunction:
        from takt.wiring.watchdog import build_watchdog

        return build_watchdog(self.settings, self.clients, self.clock, self.fence)

    @property
    def reconciler(self) -> Reconciler:
        reconciler = self.watchdog_function.reconciler
        assert reconciler is not None
        return reconciler

    @cached_property
    def indexer(self) -> DueIndexer:
        from takt.wiring.indexer import build_indexer

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
        from takt.wiring.api import tenant_limiter

        return tenant_limiter(self.settings, self.clients.dynamodb, self.buckets)

    @cached_property
    def lanes(self) -> LaneSender:
        from takt.wiring.lanes import lane_sender

        return lane_sender(self.settings, self.clients, self.clock, self.buckets)

    @cached_property
    def gate(self) -> WorkerGate:
        from takt.wiring.lanes import worker_gate

        return worker_gate(
            self.settings, self.clients.dynamodb, self.clock, self.buckets, self.executions
        )

    @cached_property
    def webhook_keys(self) -> WebhookKeys:
        from takt.wiring.targets import webhook_keys

        return webhook_keys(self.settings, self.clients.dynamodb)

    @cached_property
    def oidc(self) -> OidcSigner | None:
        from takt.wiring.targets import oidc_signer

        return oidc_signer(self.settings)

    @cached_property
    def http(self) -> HttpTarget:
        from takt.wiring.targets import http_target

        return http_target(self.settings, self.clock, self.webhook_keys, self.oidc)

    @cached_property
    def targets(self) -> TargetRouter:
        from takt.wiring.targets import target_router

        return target_router(self.settings, self.clients, self.http)

    @cached_property
    def notifier(self) -> Notifier:
        from takt.wiring.targets import notifier

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
