"""The one specification of takt's tables and queues.

The local runtime creates them on moto from this module, the tests use it, and the CDK constructs
in `infra/` build the real resources from it, so the three never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from takt.config import LANES

KeyType = Literal["S", "N"]


@dataclass(frozen=True)
class Key:
    name: str
    type: KeyType = "S"


@dataclass(frozen=True)
class Index:
    """A global secondary index. `include` None projects every attribute; a tuple projects the
    keys and those attributes only (the keys alone when empty), so a write that changes nothing
    else leaves the index alone (DynamoDB bills an index write whenever an item's projected
    image changes)."""

    name: str
    partition: Key
    sort: Key | None = None
    include: tuple[str, ...] | None = None

    def projection(self) -> dict[str, Any]:
        if self.include is None:
            return {"ProjectionType": "ALL"}
        if not self.include:
            return {"ProjectionType": "KEYS_ONLY"}
        return {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(self.include)}


@dataclass(frozen=True)
class TableSpec:
    """A DynamoDB table: `setting` is the Settings field (and env var) that carries its name."""

    logical_id: str
    setting: str
    partition: Key
    sort: Key | None = None
    indexes: tuple[Index, ...] = ()
    ttl_attribute: str | None = None
    # A stream of every change with both images (NEW_AND_OLD_IMAGES), for the due indexer.
    stream: bool = False

    def key_schema(self) -> list[dict[str, str]]:
        schema = [{"AttributeName": self.partition.name, "KeyType": "HASH"}]
        if self.sort:
            schema.append({"AttributeName": self.sort.name, "KeyType": "RANGE"})
        return schema

    def create_table_kwargs(self, table_name: str) -> dict[str, Any]:
        """Arguments for `CreateTable`, as the local runtime and the integration tests call it."""
        attributes: dict[str, str] = {self.partition.name: self.partition.type}
        if self.sort:
            attributes[self.sort.name] = self.sort.type
        gsis = []
        for index in self.indexes:
            attributes[index.partition.name] = index.partition.type
            schema = [{"AttributeName": index.partition.name, "KeyType": "HASH"}]
            if index.sort:
                attributes[index.sort.name] = index.sort.type
                schema.append({"AttributeName": index.sort.name, "KeyType": "RANGE"})
            gsis.append(
                {
                    "IndexName": index.name,
                    "KeySchema": schema,
                    "Projection": index.projection(),
                }
            )
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "KeySchema": self.key_schema(),
            "AttributeDefinitions": [
                {"AttributeName": n, "AttributeType": t} for n, t in attributes.items()
            ],
            "BillingMode": "PAY_PER_REQUEST",
        }
        if gsis:
            kwargs["GlobalSecondaryIndexes"] = gsis
        if self.stream:
            kwargs["StreamSpecification"] = {
                "StreamEnabled": True,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            }
        return kwargs


@dataclass(frozen=True)
class QueueSpec:
    """An SQS lane with its dead-letter queue."""

    lane: str
    visibility_timeout_sec: int = 360
    retention_sec: int = 4 * 24 * 3600
    dlq_retention_sec: int = 14 * 24 * 3600
    max_receive_count: int = 5
    tags: dict[str, str] = field(default_factory=dict)


UNINDEXED_INDEX = "unindexed"
JOBS = TableSpec(
    logical_id="Jobs",
    setting="jobs_table",
    partition=Key("tenant_id"),
    sort=Key("job_id"),
    indexes=(
        # Sparse: only a job the API wrote and no indexer has indexed since carries these two
        # attributes (`unindexed` a shard, `unindexed_at` the write's ms). The reconciler reads
        # the markers older than a grace period here and repairs their due items, so a job the
        # indexer never indexed is found without a scan (takt.dispatch.reconciler).
        Index(UNINDEXED_INDEX, Key("unindexed"), Key("unindexed_at", "N"), include=()),
    ),
    # The due indexer reads it: the API writes jobs only, never the due index.
    stream=True,
)
# The due index: one item per active job at its next run time, partitioned by
# (minute bucket, shard) so "what is due now" is a handful of single-partition queries.
DUE = TableSpec(
    logical_id="Due",
    setting="due_table",
    partition=Key("bucket"),
    sort=Key("due_key"),
    # Only a minute's sampled count carries it, from when the watermark passes the minute
    # (takt.store.due.EXPIRES); due items, watch lists and the meta item are deleted by takt.
    ttl_attribute="expires_at",
)
OPEN_INDEX = "open"
ATTENTION_INDEX = "attention"
EXECUTIONS = TableSpec(
    logical_id="Executions",
    setting="executions_table",
    partition=Key("job_key"),
    sort=Key("sk"),
    indexes=(
        # Sparse: only executions that still need the watchdog carry these two attributes. The
        # watchdog reads the base item of each candidate anyway, so the index holds only what
        # finds it: a lease or heartbeat, which changes neither, then writes no index entry.
        Index(
            OPEN_INDEX,
            Key("open_shard"),
            Key("check_at", "N"),
            include=("tenant_id", "execution_id"),
        ),
        # Sparse: only dead and failed executions, the ones that need a person, carry these;
        # `<tenant>#<state>#<shard>`, newest first by `<finished ms>#<execution id>`.
        Index(ATTENTION_INDEX, Key("attention_key"), Key("attention_at")),
    ),
    ttl_attribute="expires_at",
)
IDEMPOTENCY = TableSpec(
    logical_id="Idempotency",
    setting="idempotency_table",
    partition=Key("id"),
    ttl_attribute="expires_at",
)

# Per-tenant state the limits and fair dispatch keep: counters (jobs, running executions) and
# token buckets (creation rate, dispatch share, a target host's rate), one item per
# (tenant, `counter`), so every item a tenant's callers touch is under its own partition key.
TENANTS = TableSpec(
    logical_id="Tenants",
    setting="tenants_table",
    partition=Key("tenant_id"),
    sort=Key("counter"),
    # Only a deleted job's former name expires (takt.store.names); nothing else carries it.
    ttl_attribute="expires_at",
)

TABLES: tuple[TableSpec, ...] = (JOBS, DUE, EXECUTIONS, IDEMPOTENCY, TENANTS)

# The region lease (takt.store.region_lease): one item, key `pk`, read strongly consistent and
# written conditionally. Only a multi-region deployment (`regions` set) creates it, as an MRSC
# global table apart from the MREC data tables above (docs/ARCHITECTURE.md, "Regions"): it is not
# in `TABLES`, so a single-region deployment neither creates nor reads it.
REGIONS = TableSpec(
    logical_id="Regions",
    setting="region_lease_table",
    partition=Key("pk"),
)
QUEUES: tuple[QueueSpec, ...] = tuple(QueueSpec(lane=lane) for lane in LANES)
