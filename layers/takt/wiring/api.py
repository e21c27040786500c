"""The API function's parts: what every route works with, per tenant. Only the API imports this."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from takt.api.dependencies import Api, ApiSettings, TenantData
from takt.api.identity import IdentityMapping
from takt.aws import AwsClients, make_cloudwatch_client, make_sts_client
from takt.clock import Clock
from takt.config import Settings, settings_slice
from takt.executions.lifecycle import Lifecycle
from takt.stats import CloudWatchMetricsReader, MetricsReader, lane_depths
from takt.store.backfills import BackfillStore
from takt.store.buckets import TokenBuckets
from takt.store.names import JobNames
from takt.tenants import TenantLimiter
from takt.tenants.sessions import PerTenant, TenantSessions
from takt.wiring.lanes import lane_sender
from takt.wiring.stores import (
    calendar_store,
    execution_store,
    idempotency_store,
    job_store,
    quarantine_store,
    token_buckets,
)
from takt.wiring.targets import oidc_signer, webhook_keys

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def tenant_limiter(
    settings: Settings, dynamodb: DynamoDBClient, buckets: TokenBuckets
) -> TenantLimiter:
    return TenantLimiter(dynamodb, settings, settings.jobs_table, buckets)


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
