"""The API function's parts: what every route works with, per tenant. Only the API imports this."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from takt.api.dependencies import Api, ApiSettings, HolderTenants, TenantData
from takt.api.holder import LeaseHolder
from takt.api.identity import IdentityMapping
from takt.aws import (
    AwsClients,
    in_region,
    make_cloudwatch_client,
    make_dynamodb_client,
    make_sts_client,
)
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
from takt.wiring.regions import region_lease_store
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

    tenant = _tenants(settings, clients, clock, clients.dynamodb)

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
        holder=_holder_tenants(settings, clients, clock, tenant),
    )


def _tenants(
    settings: Settings, clients: AwsClients, clock: Clock, dynamodb: DynamoDBClient
) -> Callable[[str], TenantData]:
    """Each tenant's data in `settings`' region: over `dynamodb` (the function's role), or over
    the tenant's own session when the deployment names a tenant-data role."""

    def over(tenant_dynamodb: DynamoDBClient) -> TenantData:
        return _tenant_data(settings, clients, clock, tenant_dynamodb)

    if settings.tenant_data_role_arn is None:
        shared = over(dynamodb)
        return lambda _tenant_id: shared
    sessions = TenantSessions(settings, make_sts_client(settings), settings.tenant_data_role_arn)
    return PerTenant(sessions, over, clock).get


def _holder_tenants(
    settings: Settings, clients: AwsClients, clock: Clock, local: Callable[[str], TenantData]
) -> HolderTenants | None:
    """Across regions, where changes to existing jobs are written: the lease holder's replica
    (takt.api.holder). In one region, None: nothing more is read or built."""
    if not settings.regions:
        return None
    monotonic = getattr(clock, "monotonic", time.monotonic)
    lease = LeaseHolder(region_lease_store(settings), settings.region_renew_sec, monotonic)

    @functools.cache
    def in_holder(region: str) -> Callable[[str], TenantData]:
        there = in_region(settings, region)
        return _tenants(there, clients, clock, make_dynamodb_client(there))

    return HolderTenants(lease=lease, here=settings.region, local=local, in_region=in_holder)


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
