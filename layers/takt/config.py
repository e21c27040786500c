"""One place where takt reads its configuration.

The CDK app passes these as environment variables to every function; the local runtime sets the
same variables for the moto-backed run. Nothing else in the library reads the environment.

`Settings` reads `TAKT_<FIELD>` itself (`environment_values`) rather than through
pydantic-settings: that package imports every settings source it has (its command-line source
brings argparse), about 90 ms of CPU on every cold start of every function, to read flat
environment variables. The rules are the ones the deployment relies on: names match without
regard to case, a list, tuple, mapping or model is JSON, `null` is None, and a value passed to
the constructor wins over the environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import fields
from functools import lru_cache
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from takt.models.egress import AllowList
from takt.models.notify import NotifyPolicy

LANES: tuple[str, ...] = ("high", "default", "low")
# The most slots (`takt worker --concurrency`, the profiles' `fargateSlots`) one worker process
# runs: the most bench/worker_slots.py measured holding its CPU per execution and its memory
# (docs/WORKERS.md, "How many slots a worker carries"). How many a task's vCPU carries is less:
# docs/DEPLOY.md, `fargateSlots`.
MAX_WORKER_SLOTS = 400
# What a caller may do (docs/SECURITY.md): admin everything, for any tenant; write and read its
# own tenant's jobs; worker no job API, only leasing its tenant's executions.
Role = Literal["admin", "write", "read", "worker"]


class TenantLimits(BaseModel):
    """What one tenant may use; `None` means no limit. See docs/SECURITY.md and docs/FAIRNESS.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Stored jobs (paused ones count); creating one more answers 429.
    max_jobs: int | None = Field(default=100_000, ge=1)
    # Job creations per second (token bucket, `create_burst` deep); more answer 429.
    create_per_sec: float | None = Field(default=50.0, gt=0)
    create_burst: int = Field(default=100, ge=1)
    # API requests per second on every route (token bucket, `api_burst` deep), shared by every
    # API function instance; more answer 429 with Retry-After (takt.api.ratelimit).
    api_per_sec: float | None = Field(default=50.0, gt=0)
    api_burst: int = Field(default=100, ge=1)
    # Size of a job's payload (JSON); larger answers 413.
    max_payload_bytes: int = Field(default=256 * 1024, ge=1)
    # Executions running (leased) at once; more wait, pending, until a slot frees.
    max_running: int | None = Field(default=None, ge=1)
    # The tenant's share of dispatch when tenants compete (weighted fair dispatch).
    weight: int = Field(default=1, ge=1, le=1000)


class RateLimit(BaseModel):
    """A target host's rate: `per_sec` calls a second on average, `burst` at once at most."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    per_sec: float = Field(gt=0, le=100_000)
    burst: int = Field(default=1, ge=1, le=100_000)


class IamPrincipal(BaseModel):
    """An IAM principal ARN pattern (`*` matches any run of characters) and who it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arn: str = Field(pattern=r"^arn:[^:]+:(iam|sts)::")
    tenant: str = Field(min_length=1)
    role: Role


ENV_PREFIX = "TAKT_"
# `null` in the environment is None, so an optional setting can be turned off (a role).
ENV_NONE = "null"
_COLLECTIONS = (dict, list, tuple, set, frozenset)
# Lists the environment may also give as "a,b,c" (the model splits them).
_COMMA_LISTS = frozenset({"regions"})


def _is_json(annotation: Any) -> bool:
    """Whether a setting of this type is written as JSON in the environment: a collection or a
    model, alone or in an optional union."""
    if get_origin(annotation) in (Union, UnionType):
        return any(_is_json(arg) for arg in get_args(annotation) if arg is not NoneType)
    kind = get_origin(annotation) or annotation
    return kind in _COLLECTIONS or (isinstance(kind, type) and issubclass(kind, BaseModel))


def environment_values(model: type[BaseModel], environ: Mapping[str, str]) -> dict[str, Any]:
    """The fields of `model` that `environ` sets as `TAKT_<FIELD>`, decoded (JSON or None)."""
    by_name = {key.upper(): value for key, value in environ.items()}
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        raw = by_name.get(f"{ENV_PREFIX}{name}".upper())
        if raw is None:
            continue
        if raw == ENV_NONE:
            values[name] = None
        elif name in _COMMA_LISTS and not raw.lstrip().startswith("["):
            values[name] = raw
        elif _is_json(field.annotation):
            try:
                values[name] = json.loads(raw)
            except json.JSONDecodeError as error:
                raise ValueError(f"{ENV_PREFIX}{name.upper()} is not JSON: {error}") from None
        else:
            values[name] = raw
    return values


class Settings(BaseModel):
    """Deployment settings, read from `TAKT_*` environment variables."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    def __init__(self, **values: Any) -> None:
        super().__init__(**{**environment_values(type(self), os.environ), **values})

    jobs_table: str = "takt-jobs"
    due_table: str = "takt-due"
    executions_table: str = "takt-executions"
    idempotency_table: str = "takt-idempotency"
    tenants_table: str = "takt-tenants"
    # Lane name -> queue URL, as JSON in the environment: {"high": "https://...", ...}.
    lane_urls: dict[str, str] = Field(default_factory=dict)

    region: str = "us-east-1"
    # Set only by the local runtime (moto's server); empty means the AWS default endpoints.
    aws_endpoint_url: str | None = None

    # Every region of a multi-region deployment, the first the region lease's initial holder
    # (docs/ARCHITECTURE.md, "Regions"); a JSON list or a comma list in the environment. Empty:
    # one region, the region fence off, and the lease table neither read nor written.
    regions: tuple[str, ...] = ()
    region_lease_table: str = "takt-regions"
    # Local only: the witness moto that every region's process shares for the lease table.
    region_lease_endpoint_url: str | None = None
    # Local only: each region's moto endpoint (JSON in the environment: {"us-east-2":
    # "http://127.0.0.1:5001"}), where the API writes changes to existing jobs when that region
    # holds the lease (takt.api.holder). In AWS the holder's regional endpoint is used: unset.
    region_endpoints: dict[str, str] = Field(default_factory=dict)
    # A region acts only within `region_lease_sec - region_margin_sec` of its last proof, renews
    # every `region_renew_sec`, and takes over a lease unchanged for `lease + margin`.
    region_lease_sec: float = Field(default=20.0, gt=0)
    region_renew_sec: float = Field(default=5.0, gt=0)
    region_margin_sec: float = Field(default=5.0, ge=0)

    # The due index is partitioned by (minute bucket, shard); see docs/ARCHITECTURE.md for N.
    due_shards: int = Field(default=16, ge=1, le=1024)
    # A hot minute is split when its items are written (takt.store.due): into the smallest power
    # of two k of N-shard sets that gives each partition at most `due_split_items` of its
    # sampled count, and at most `due_split_max` of them.
    due_split_items: int = Field(default=2000, ge=1)
    due_split_max: int = Field(default=16, ge=1, le=64)
    # The open-executions index the watchdog reads is partitioned by shard too.
    open_shards: int = Field(default=8, ge=1, le=256)
    # How many past minute buckets one tick may sweep when catching up after an outage.
    max_catchup_buckets: int = Field(default=60, ge=1)
    # Due items younger than this are never deleted as stale: a create or update may still be
    # writing the job that points at them.
    due_grace_sec: float = 30.0
    # A job the API marked unindexed and no indexer indexed within this long is indexed by the
    # reconciler (takt.dispatch.reconciler); well above the stream's usual sub-second lag.
    reindex_grace_sec: float = Field(default=120.0, ge=0.0)
    # Occurrences due within this long are claimed now and held by the worker until their exact
    # time, so a run starts on time instead of at the next whole-second tick.
    dispatch_ahead_sec: float = Field(default=1.0, ge=0.0, le=5.0)
    # The top-of-minute burst (what is due in a minute's first second: every hourly or daily
    # cron job) is claimed up to this long before the minute, each message delayed by SQS
    # until its second, so the claims' writes are done before the burst is due
    # (docs/CAPACITY.md). Only jobs whose run depends on nothing at that instant are taken so
    # early (overlap `allow`, not a workflow); an edit before the due time still decides
    # (takt.worker.recheck). 0 claims the burst like any other second.
    burst_ahead_sec: float = Field(default=30.0, ge=0.0, le=50.0)

    # A running execution's lease, renewed every quarter of it at most (DESIGN: leases without a
    # shared clock), so three lost heartbeats never cost a run.
    lease_sec: float = 30.0
    heartbeat_sec: float = 7.5
    # Wall clocks of two functions may disagree: a lease counts as expired only this long after
    # its recorded expiry (DESIGN invariant 5).
    clock_margin_sec: float = 2.0
    # A pending execution whose message has not been taken for this long is sent again.
    pending_resend_after_sec: float = 30.0
    watchdog_interval_sec: float = 10.0

    # Where a claimed occurrence's execution is first written (docs/CAPACITY.md, "The record
    # written at the lease"): False, by the claim, which records it pending; True, by the worker
    # that leases it, one write for both, for the occurrences whose run depends on nothing at
    # the claim (overlap `allow`, not a workflow). The claim's watch list and the watchdog's
    # check of it keep every such occurrence found (takt.watchdog.sweeper).
    record_at_lease: bool = False
    # How a claim marks the due items it fired (docs/CAPACITY.md, "The claim cursor"): False,
    # it deletes each; True, it moves its partition's cursor past the run of them it finished,
    # one write a claim, and the table's time to live removes them. An item due within
    # `due_late_margin_sec` of its writer's clock goes where no cursor passes, and is deleted
    # as before (takt.store.due).
    due_cursor: bool = False
    due_late_margin_sec: float = Field(default=300.0, gt=0.0)

    history_retention_days: float = 7.0
    idempotency_retention_days: float = 1.0
    max_payload_bytes: int = 256 * 1024

    claimer_mode: Literal["inline", "lambda"] = "inline"
    claimer_function: str | None = None
    claimer_threads: int = Field(default=8, ge=1, le=64)
    # A driver ends its invocation once nothing is due before the next minute's driver, and the
    # indexer starts one (`scheduler_function`) for a job due sooner (`takt.dispatch.rest`): the
    # small profile's idle saving.
    driver_rest: bool = False
    scheduler_function: str | None = None

    # Registered-handler modules the worker imports, comma-separated ("billing.jobs,reports").
    handler_modules: str = ""
    # An attempt whose handler no worker serves fails once it has been sent back this long
    # (docs/WORKERS.md), rather than stay pending for ever; long enough for a `takt worker`
    # fleet that serves it to be deployed or restarted.
    unserved_limit_sec: float = Field(default=900.0, ge=0.0)
    # A worker Lambda gives back an unfinished execution this long before its own timeout.
    give_back_margin_sec: float = Field(default=3.0, ge=0.0)
    # How many of a batch's messages the worker Lambda runs at once (takt.worker.batch): a run
    # mostly waits on its target, so a batch runs side by side rather than one after another.
    worker_batch_concurrency: int = Field(default=10, ge=1, le=100)
    # Connections an HTTP target's host keeps pooled (takt.targets.http): at least the calls a
    # process makes to one host at once, or each call beyond them opens a connection of its own
    # (over HTTPS, a TLS handshake's CPU too) and drops it after. `takt worker` raises it to its
    # `--concurrency`, whose slots may all call one host.
    http_pool_size: int = Field(default=32, ge=1, le=MAX_WORKER_SLOTS)

    # Scale ahead of the due index (takt.dispatch.ahead): once a minute the watchdog counts what
    # is due in this minute and the next `scale_ahead_minutes` (0 turns the count off), at most
    # `scale_ahead_count_pages` COUNT queries per (minute, shard) partition, and publishes it.
    # With `fargate_service` ("service/<cluster>/<service>") it also raises the service's minimum
    # task count to run the busiest minute's executions, each taking `scale_ahead_job_sec`, on
    # `fargate_slots` executions a task, between `fargate_min_tasks` and `fargate_max_tasks`.
    scale_ahead_minutes: int = Field(default=0, ge=0, le=15)
    scale_ahead_count_pages: int = Field(default=4, ge=1, le=64)
    scale_ahead_job_sec: float = Field(default=10.0, gt=0)
    fargate_service: str | None = Field(default=None, pattern=r"^service/[^/]+/[^/]+$")
    fargate_slots: int = Field(default=200, ge=1, le=256)
    fargate_min_tasks: int = Field(default=0, ge=0)
    fargate_max_tasks: int = Field(default=10, ge=1)
    # Provisioned tables raised ahead of the same forecast (takt.dispatch.ahead.TableScaleAhead):
    # the write minimum each of the executions, jobs and due tables returns to (its profile's),
    # by table; empty when the tables are on demand. Target tracking holds
    # `table_target_utilization` percent.
    table_write_floors: dict[Literal["executions", "jobs", "due"], Annotated[int, Field(ge=1)]] = (
        Field(default_factory=dict)
    )
    # ... and the read minimum each returns to (1 for a table not named).
    table_read_floors: dict[Literal["executions", "jobs", "due"], Annotated[int, Field(ge=1)]] = (
        Field(default_factory=dict)
    )
    table_target_utilization: int = Field(default=70, ge=20, le=90)

    # The master secret each tenant's Standard Webhooks signing key is derived from
    # (takt.tenants.webhook_keys); unset sends no signature. Deployed stacks name it
    # (`signing_secret_name`, read from Secrets Manager at call time); the plain value is for
    # local use. A job's own `signing_secret` (a key, not a master) overrides the tenant's key.
    signing_secret: str | None = None
    signing_secret_name: str | None = None
    # Secrets a tenant's targets reference are named `<secret_prefix><tenant>/...`; the worker
    # may read nothing else (docs/SECURITY.md). Values are cached this long per worker.
    secret_prefix: str = "takt/"  # noqa: S105 - a name prefix, not a password
    secret_cache_sec: int = Field(default=60, ge=0, le=3600)
    # Non-public addresses HTTP targets may still reach: CIDRs, addresses, host names and
    # `*.suffix` patterns (JSON list). Empty, the deployed default, refuses every one of them;
    # `takt local` allows loopback and private networks unless run with --strict-egress.
    egress_allow: tuple[str, ...] = ()
    worker_id: str | None = None

    # Who a caller is (takt.api.identity): the JWT claim that names the tenant, the claim whose
    # values (a role, or group names) give the role, and names of groups and scopes -> role
    # (JSON); IAM principal ARN patterns -> tenant and role (JSON list), other IAM callers being
    # their account with `iam_default_role`. A null default role gives no rights (403).
    tenant_claim: str = "tenant"
    # The role the API assumes per tenant, tagged with it, whose policy confines a session to the
    # tenant's items (dynamodb:LeadingKeys); unset, the API uses its own role (local mode).
    tenant_data_role_arn: str | None = None
    role_claim: str = "takt_role"
    role_names: dict[str, Role] = Field(default_factory=dict)
    jwt_default_role: Role | None = "write"
    iam_principals: tuple[IamPrincipal, ...] = ()
    iam_default_role: Role | None = "write"
    # A `takt worker` serving one tenant leases only its executions (others are sent back).
    worker_tenant: str | None = None
    # Default destination for metrics (Powertools Metrics namespace).
    metrics_namespace: str = "takt"

    # Limits for every tenant, and overrides by tenant id (JSON in the environment).
    tenant_limits: TenantLimits = Field(default_factory=TenantLimits)
    tenant_limit_overrides: dict[str, TenantLimits] = Field(default_factory=dict)

    # Weighted fair dispatch (docs/FAIRNESS.md): each tenant's messages go to their own lane at
    # up to `fair_dispatch_per_sec` times its weight a second (`fair_dispatch_burst_sec` of that
    # at once); the rest overflow into `overflow_lane`. None turns it off (no extra write).
    fair_dispatch_per_sec: float | None = Field(default=None, gt=0)
    fair_dispatch_burst_sec: float = Field(default=2.0, gt=0)
    overflow_lane: str = "low"
    # Due items of backlogged tenants per claim, shared between them by weight, when the lanes
    # are busy (the floor: with `fair_queue_sec` the claim takes more while the lanes keep up);
    # the rest wait in the due index for the next tick. None claims everything due, fairness
    # off (docs/FAIRNESS.md).
    claim_max_items: int | None = Field(default=10, ge=1)
    # How many seconds of the lanes' measured drain rate backlogged tenants may keep queued:
    # sizes their claims (above `claim_max_items`) and how many of their messages go to the
    # fast lanes rather than the overflow lane (takt.fairness.adaptive). None: fixed claims of
    # `claim_max_items`, no drain-derived shares.
    fair_queue_sec: float | None = Field(default=0.5, gt=0, le=60)
    # A bounded claim reads at most this many pages of due items to choose from
    # (`DueStore.read_fair`), so its cost does not grow with the backlog.
    claim_read_pages: int = Field(default=4, ge=1, le=64)
    # How long a message waits before it is offered again when its tenant's running cap is full.
    running_cap_retry_sec: int = Field(default=2, ge=1, le=900)
    # Container targets (takt.targets.container, docs/WORKERS.md): the ECS cluster their tasks
    # run in (unset: the worker runs none), the awsvpc subnets and security groups (JSON lists),
    # whether a task gets a public IP (to pull an image without a NAT gateway), the task
    # definitions' execution role (pulls the image, writes the logs) and task role (what the
    # container may call; none when unset), the log group the awslogs driver writes to with its
    # stream prefix, and how often a running task is looked at.
    container_cluster: str | None = None
    container_subnets: tuple[str, ...] = ()
    container_security_groups: tuple[str, ...] = ()
    container_public_ip: bool = False
    container_execution_role_arn: str | None = None
    container_task_role_arn: str | None = None
    container_log_group: str = "/takt/containers"
    container_log_prefix: str = "takt"
    container_poll_sec: float = Field(default=5.0, ge=0.0, le=60.0)
    # The KMS RSA key (id, ARN or alias) that signs OIDC tokens for HTTP targets with
    # `auth.oidc` (takt.targets.oidc), and the `iss` those tokens name; unset, such targets fail.
    oidc_key_id: str | None = None
    oidc_issuer: str = "takt"
    # Each tenant's default notification policy (takt.notify), for its jobs that set none
    # (JSON in the environment): {"acme": {"to": "arn:aws:sns:...", "on": ["dead"]}}.
    notify_defaults: dict[str, NotifyPolicy] = Field(default_factory=dict)
    # Rate limits by target host (lower case), shared by every worker (JSON in the environment):
    # {"api.example.com": {"per_sec": 5, "burst": 10}}.
    host_rate_limits: dict[str, RateLimit] = Field(default_factory=dict)

    @field_validator("regions", mode="before")
    @classmethod
    def _regions_as_list(cls, value: object) -> object:
        # A comma list ("us-east-1,us-east-2") as well as a JSON one.
        if isinstance(value, str):
            return tuple(name.strip() for name in value.split(",") if name.strip())
        return value

    @model_validator(mode="after")
    def _regions_fit(self) -> Settings:
        if not self.regions:
            return self
        if len(set(self.regions)) != len(self.regions):
            raise ValueError(f"regions lists a region twice: {','.join(self.regions)}")
        if self.region not in self.regions:
            raise ValueError(f"region {self.region} is not one of regions {','.join(self.regions)}")
        # A holder renews before its proof runs out, or it would stop acting between renewals.
        if self.region_renew_sec >= self.region_lease_sec - self.region_margin_sec:
            raise ValueError(
                f"region_renew_sec ({self.region_renew_sec:g}) must be shorter than "
                f"region_lease_sec - region_margin_sec ({self.region_lease_sec:g} - "
                f"{self.region_margin_sec:g}): a region acts only that long after a renewal"
            )
        return self

    @field_validator("egress_allow")
    @classmethod
    def _egress_allow(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        AllowList.parse(value)
        return value

    @model_validator(mode="after")
    def _lease_outlives_the_margin(self) -> Settings:
        # A worker stops its call once `lease_sec - clock_margin_sec` passes without a
        # heartbeat (takt.worker.runner): with no time left, it would call nothing at all.
        if self.lease_sec <= self.clock_margin_sec:
            raise ValueError(
                f"lease_sec ({self.lease_sec:g}) must be longer than clock_margin_sec "
                f"({self.clock_margin_sec:g}): a worker acts only while its lease has more "
                "than the margin left"
            )
        return self

    @model_validator(mode="after")
    def _late_margin_outreaches_the_claims(self) -> Settings:
        # A cursor passes keys up to a claim's horizon (its clock, plus the burst's minute
        # start and first second at most): an item written further ahead of its writer's clock
        # than that, and two clock margins, cannot land behind one (takt.store.due).
        reach = max(self.dispatch_ahead_sec, self.burst_ahead_sec + 1.0)
        if self.due_late_margin_sec <= reach + 2 * self.clock_margin_sec:
            raise ValueError(
                f"due_late_margin_sec ({self.due_late_margin_sec:g}) must be longer than a "
                f"claim's reach ({reach:g}) and two clock margins "
                f"({2 * self.clock_margin_sec:g}): a cursor passes keys that far ahead"
            )
        return self

    def limits_for(self, tenant_id: str) -> TenantLimits:
        """The limits that apply to `tenant_id`."""
        return self.tenant_limit_overrides.get(tenant_id, self.tenant_limits)

    @property
    def handler_module_names(self) -> tuple[str, ...]:
        return tuple(m.strip() for m in self.handler_modules.split(",") if m.strip())

    def lane_url(self, lane: str) -> str:
        """The queue URL of a lane; a missing lane is a deployment error, not a user error."""
        try:
            return self.lane_urls[lane]
        except KeyError:
            raise RuntimeError(f"no queue configured for lane {lane!r}") from None


S = TypeVar("S")


def settings_slice(kind: type[S], settings: Settings) -> S:
    """The settings a component reads, as its own frozen dataclass `kind` whose fields are named
    as in `Settings`: the component receives those and no more (takt.wiring cuts them)."""
    values: dict[str, Any] = {f.name: getattr(settings, f.name) for f in fields(kind)}  # type: ignore[arg-type]
    return kind(**values)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
