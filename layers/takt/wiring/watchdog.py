"""The watchdog function's parts: the sweeper, the Fargate fleet's scale-ahead, the reconciler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from takt.aws import AwsClients, make_autoscaling_client
from takt.clock import Clock
from takt.config import Settings
from takt.dispatch.ahead import (
    DueForecaster,
    FleetPlan,
    ScaleAhead,
    ScaledTable,
    TableLoad,
    TableScaleAhead,
    hold_after_increase,
)
from takt.dispatch.reconciler import Reconciler
from takt.models.regions import Fence
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring.lanes import lane_sender, worker_gate
from takt.wiring.stores import (
    due_store,
    execution_store,
    job_store,
    quarantine_store,
    token_buckets,
)
from takt.wiring.targets import notifier, signed_http_target


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


def build_watchdog(
    settings: Settings, clients: AwsClients, clock: Clock, fence: Fence | None = None
) -> WatchdogFunction:
    jobs = job_store(settings, clients.dynamodb)
    executions = execution_store(settings, clients.dynamodb)
    buckets = token_buckets(settings, clients.dynamodb)
    http = signed_http_target(settings, clients, clock)
    watchdog = Watchdog(
        WatchdogSettings.of(settings),
        jobs,
        due_store(settings, clients.dynamodb),
        executions,
        lane_sender(settings, clients, clock, buckets),
        release_slot=worker_gate(settings, clients.dynamodb, clock, buckets, executions).release,
        notifier=notifier(settings, clients, jobs, http),
        quarantine=quarantine_store(settings, clients.dynamodb),
        fence=fence,
    )
    return WatchdogFunction(
        watchdog,
        clock,
        settings.watchdog_interval_sec,
        scale_ahead(settings, clients),
        build_reconciler(settings, clients),
    )


def scale_ahead(settings: Settings, clients: AwsClients) -> ScaleAhead | None:
    """What falls due in the next minutes, and the Fargate worker service and the provisioned
    tables sized for it."""
    if settings.scale_ahead_minutes <= 0:
        return None
    autoscaling = (
        make_autoscaling_client(settings)
        if settings.fargate_service or settings.table_write_floors
        else None
    )
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
        autoscaling if settings.fargate_service else None,
        settings.fargate_service,
        scaled_tables(settings, autoscaling, clients) if settings.table_write_floors else None,
    )


def scaled_tables(settings: Settings, autoscaling: Any, clients: AwsClients) -> TableScaleAhead:
    """The provisioned tables whose write and read minimums the step raises ahead of the
    forecast, held through the burst (`hold_after_increase`)."""
    names = {
        "executions": settings.executions_table,
        "jobs": settings.jobs_table,
        "due": settings.due_table,
    }
    return TableScaleAhead(
        tuple(
            ScaledTable(kind, names[kind], floor, settings.table_read_floors.get(kind, 1))
            for kind, floor in sorted(settings.table_write_floors.items())
        ),
        TableLoad(
            job_sec=settings.scale_ahead_job_sec,
            heartbeat_sec=settings.heartbeat_sec,
            target_utilization=settings.table_target_utilization,
        ),
        autoscaling,
        clients.dynamodb,
        hold_after_increase(settings.scale_ahead_minutes),
    )


def build_reconciler(settings: Settings, clients: AwsClients) -> Reconciler:
    """The watchdog's repair of jobs the indexer did not index (takt.dispatch.reconciler)."""
    return Reconciler(
        job_store(settings, clients.dynamodb),
        due_store(settings, clients.dynamodb),
        settings.reindex_grace_sec,
        quarantine_store(settings, clients.dynamodb),
    )
