"""What the API works with, handed to it by its builder (`takt.wiring.build_api`).

The API does not build its stores or read the deployment's whole configuration: the handler
passes an `Api` into each request (`takt.api.app.handle`), and the routes and commands take what
they need from it. A tenant's tables are reached through `Api.tenant`, which, deployed, gives the
stores of that tenant's own DynamoDB session (`takt.tenants.sessions`), so IAM confines each
request to its tenant's items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError, ClientError

from takt.api.errors import RegionUnavailableError
from takt.api.holder import LeaseHolder
from takt.api.identity import IdentityMapping
from takt.clock import Clock
from takt.config import TenantLimits
from takt.dispatch.lanes import LaneSender
from takt.executions.lifecycle import Lifecycle
from takt.stats import LaneDepth, MetricsReader
from takt.store.backfills import BackfillStore
from takt.store.buckets import TokenBuckets
from takt.store.calendars import CalendarStore
from takt.store.executions import ExecutionStore
from takt.store.idempotency import IdempotencyStore
from takt.store.jobs import JobStore
from takt.store.names import JobNames
from takt.store.quarantine import QuarantineStore, Unreadable
from takt.targets.oidc import OidcSigner
from takt.tenants import TenantLimiter
from takt.tenants.webhook_keys import WebhookKeys


@dataclass(frozen=True)
class ApiSettings:
    """The settings the API's commands read."""

    # Queue-topic targets are published in this region; others are refused at create.
    region: str
    # What HTTP targets may reach and which secrets they may name, checked at create.
    egress_allow: tuple[str, ...]
    secret_prefix: str
    tenant_limits: TenantLimits
    tenant_limit_overrides: Mapping[str, TenantLimits]

    def limits_for(self, tenant_id: str) -> TenantLimits:
        """The limits that apply to `tenant_id`."""
        return self.tenant_limit_overrides.get(tenant_id, self.tenant_limits)


@dataclass(frozen=True)
class TenantData:
    """One tenant's tables, and the engines the API drives over them."""

    jobs: JobStore
    executions: ExecutionStore
    idempotency: IdempotencyStore
    calendars: CalendarStore
    names: JobNames
    limiter: TenantLimiter
    buckets: TokenBuckets
    webhook_keys: WebhookKeys
    lanes: LaneSender
    # Every change of an execution's state the API makes (trigger, cancel), with the workflow
    # runs and backfills it drives.
    lifecycle: Lifecycle
    backfill_store: BackfillStore


@dataclass(frozen=True)
class HolderTenants:
    """A tenant's data in the lease holder's replica: this region's own when it holds the lease,
    else over clients for the holder's region (`in_region`, built once per region)."""

    lease: LeaseHolder
    here: str
    local: Callable[[str], TenantData]
    in_region: Callable[[str], Callable[[str], TenantData]]

    def tenant(self, tenant_id: str) -> TenantData:
        region = self.lease.region()
        if region == self.here:
            return self.local(tenant_id)
        return self.in_region(region)(tenant_id)

    @contextmanager
    def reached(self, job_id: str) -> Iterator[None]:
        """A holder's replica that cannot be reached, or answers with a server error after the
        client's retries, as 503: the change is not made anywhere."""
        try:
            yield
        except (BotoCoreError, ClientError) as exc:
            if isinstance(exc, ClientError) and _status(exc) < 500:
                raise
            raise RegionUnavailableError(
                f"the lease holder's replica cannot be reached ({exc}); job {job_id} is unchanged",
                self.lease.retry_after_sec,
            ) from exc


def _status(error: ClientError) -> int:
    return int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


@dataclass(frozen=True)
class Api:
    settings: ApiSettings
    identity: IdentityMapping
    clock: Clock
    # A tenant's data, through its own session when the deployment names a tenant-data role.
    tenant: Callable[[str], TenantData]
    # The last hour's metrics for the stats route (CloudWatch, or `takt local`'s window).
    metrics: Callable[[], MetricsReader]
    lane_depths: Callable[[], list[LaneDepth]]
    # The OIDC token signer whose public keys the JWKS route serves, when there is one.
    oidc: OidcSigner | None
    # Quarantined records (admin routes), with the function's own role: IAM confines it to
    # their partition, and no tenant's session may read them (takt.store.quarantine).
    quarantine: QuarantineStore | None = None
    # Across regions (`regions` set): where changes to existing jobs are written, the lease
    # holder's replica (takt.api.holder). None in one region: they are written here.
    holder: HolderTenants | None = None

    def parked(self, table: str, tenant_id: str) -> Unreadable | None:
        """What a listing does with an item it cannot read: parks it in quarantine (counted,
        for an operator) and lists the others (DESIGN invariant 9)."""
        store = self.quarantine
        if store is None:
            return None

        def park(key: dict[str, str], error: Exception) -> None:
            store.park(
                table=table,
                key=key,
                where="api",
                error=error,
                now=self.clock.now(),
                tenant_id=tenant_id,
            )

        return park
