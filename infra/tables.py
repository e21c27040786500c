"""takt's DynamoDB tables, built from `takt.resources.TABLES` so the cloud, moto and the tests
share one definition of every key, index and TTL attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from aws_cdk import RemovalPolicy, Stack, Tags
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from infra.regions import RegionPlan
from takt.config import Settings
from takt.resources import REGIONS, TABLES, Index, Key, TableSpec

_TYPES = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER}


# Application Auto Scaling's target tracking accepts a DynamoDB utilization of 20-90 %.
MIN_TARGET_UTILIZATION = 20
MAX_TARGET_UTILIZATION = 90
# DynamoDB's default per-table quota on provisioned capacity, each way (a Service Quotas value).
MAX_TABLE_CAPACITY = 40000
# The most a `tableCapacity` range may name: the quota can be raised (Service Quotas), and
# `takt deploy check` names a range above the account's.
MOST_TABLE_CAPACITY = 1_000_000
# The tag a table's write scalable target carries: its resource id (`table/<name>`).
SCALED_TABLE_TAG = "takt:scaled-table"


def capacity_names() -> tuple[str, ...]:
    """What `tableCapacity` keys: each table (`executions`) and index (`executions/open`)."""
    names: list[str] = []
    for spec in TABLES:
        names.append(spec.logical_id.lower())
        names.extend(f"{spec.logical_id.lower()}/{index.name}" for index in spec.indexes)
    return tuple(names)


@dataclass(frozen=True)
class Capacity:
    """A table's or index's provisioned capacity range, each way; auto scaling moves it
    between the two, and the table starts at the minimum."""

    min_write: int = 5
    max_write: int = MAX_TABLE_CAPACITY
    min_read: int = 5
    max_read: int = MAX_TABLE_CAPACITY


@dataclass(frozen=True)
class TableBilling:
    """`tableBilling=provisioned`: every table and index provisioned, with target tracking at
    `target_utilization` percent, each in its `capacity` range (`Capacity()` when not named)."""

    target_utilization: int = 70
    capacity: Mapping[str, Capacity] = field(default_factory=dict)

    def of(self, name: str) -> Capacity:
        return self.capacity.get(name, Capacity())


def _projection(index: Index) -> dynamodb.ProjectionType:
    if index.include is None:
        return dynamodb.ProjectionType.ALL
    return dynamodb.ProjectionType.INCLUDE if index.include else dynamodb.ProjectionType.KEYS_ONLY


def _attribute(key: Key) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=_TYPES[key.type])


# The item calls takt's stores make (layers/takt/store): a transaction is authorized by the
# actions of its parts, so TransactWriteItems needs no action of its own.
TABLE_READ_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:ConditionCheckItem",
)
TABLE_WRITE_ACTIONS = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
)


class Tables(Construct):
    """The tables: on demand (or provisioned), encrypted, recoverable, and retained when the
    stack goes.

    On-demand billing by default because a small deployment's tables are mostly idle (a
    provisioned table and each of its indexes pay their minimum capacity by the hour), and the
    seed's top of the hour is a burst within a minute that auto scaling cannot follow: held at
    that minute's rate all hour, provisioned costs several times on demand. With `billing`
    (`-c tableBilling=provisioned`) every table and index is provisioned with target-tracking
    auto scaling, which at a steady load costs about 40 % of on demand
    (docs/CAPACITY.md, "DynamoDB on demand or provisioned"). Encryption uses
    the AWS managed key `aws/dynamodb`: no key to pay for or rotate, its use shows in CloudTrail,
    and grants from the stateless stack need no key policy in this one. RETAIN and
    deletion protection because these tables are the jobs and their history: deleting or
    replacing the stack must never delete them.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        billing: TableBilling | None = None,
        regions: RegionPlan | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._tables: dict[str, dynamodb.ITable] = {}
        # The `regions` lease table, in a deployment across regions only.
        self.lease: dynamodb.ITable | None = None
        region = Stack.of(self).region
        for spec in TABLES:
            if regions is None:
                self._tables[spec.logical_id] = self._regional(spec, billing)
            elif region == regions.primary:
                self._tables[spec.logical_id] = _global_table(self, spec, regions)
            else:
                self._tables[spec.logical_id] = _replica(self, spec)
        if regions is not None:
            self.lease = (
                _lease_table(self, regions)
                if region == regions.primary
                else _replica(self, REGIONS)
            )

    def _regional(self, spec: TableSpec, billing: TableBilling | None) -> dynamodb.Table:
        """The table of a deployment in one region."""
        name = spec.logical_id.lower()
        capacity = billing.of(name) if billing else None
        table = dynamodb.Table(
            self,
            spec.logical_id,
            partition_key=_attribute(spec.partition),
            sort_key=_attribute(spec.sort) if spec.sort else None,
            billing_mode=dynamodb.BillingMode.PROVISIONED
            if capacity
            else dynamodb.BillingMode.PAY_PER_REQUEST,
            read_capacity=capacity.min_read if capacity else None,
            write_capacity=capacity.min_write if capacity else None,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=spec.ttl_attribute,
            # The jobs table's stream feeds the due indexer (`takt.dispatch.indexer`).
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES if spec.stream else None,
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        for index in spec.indexes:
            # The projection `TableSpec.create_table_kwargs` creates locally: ALL, the keys
            # and `index.include` (the `open` index: docs/CAPACITY.md), or the keys alone
            # (the jobs table's `unindexed` markers).
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_attribute(index.partition),
                sort_key=_attribute(index.sort) if index.sort else None,
                projection_type=_projection(index),
                non_key_attributes=list(index.include) if index.include else None,
                read_capacity=billing.of(f"{name}/{index.name}").min_read if billing else None,
                write_capacity=(billing.of(f"{name}/{index.name}").min_write if billing else None),
            )
        if billing:
            _auto_scale(table, spec, billing)
        return table

    def table(self, spec: TableSpec) -> dynamodb.ITable:
        """The table built for `spec`."""
        return self._tables[spec.logical_id]

    def grant(self, spec: TableSpec, grantee: iam.IGrantable, *, write: bool) -> None:
        """Give `grantee` the item calls takt's stores make on `spec`'s table and its indexes:
        reads, and writes when `write`. Not `grant_read_data`: it adds Scan, DescribeTable and
        the stream's GetRecords and GetShardIterator, which no function calls (the indexer's
        stream is granted with its event source). The tables use AWS-owned keys: no key grant."""
        actions = TABLE_READ_ACTIONS + (TABLE_WRITE_ACTIONS if write else ())
        self.table(spec).grant(grantee, *actions)

    def grant_lease(self, grantee: iam.IGrantable) -> None:
        """Give `grantee` the region lease's reads and writes; nothing in one region, which has
        no lease."""
        if self.lease is not None:
            self.lease.grant(grantee, *TABLE_READ_ACTIONS, *TABLE_WRITE_ACTIONS)

    def grant_lease_read(self, grantee: iam.IGrantable) -> None:
        """Let `grantee` read the region lease, never write it; nothing in one region."""
        if self.lease is not None:
            self.lease.grant(grantee, "dynamodb:GetItem")

    def name(self, spec: TableSpec) -> str:
        """The name a function reads `spec`'s table by: a global table's is the same in every
        region (`global_table_name`)."""
        if self.lease is not None:
            return global_table_name(spec)
        return self.table(spec).table_name

    def all(self) -> list[tuple[TableSpec, dynamodb.ITable]]:
        """Every table with its spec, in `TABLES` order."""
        return [(spec, self._tables[spec.logical_id]) for spec in TABLES]


def _auto_scale(table: dynamodb.Table, spec: TableSpec, billing: TableBilling) -> None:
    """Target tracking on the table's and each index's reads and writes: an index has its own
    capacity, and a write to the table that the index cannot take is throttled as a whole."""
    target = billing.target_utilization
    name = spec.logical_id.lower()
    own = billing.of(name)
    writes = table.auto_scale_write_capacity(min_capacity=own.min_write, max_capacity=own.max_write)
    writes.scale_on_utilization(target_utilization_percent=target)
    reads = table.auto_scale_read_capacity(min_capacity=own.min_read, max_capacity=own.max_read)
    reads.scale_on_utilization(target_utilization_percent=target)
    # The watchdog raises the write and read minimums ahead of the due index
    # (infra/table_ahead.py): its grant names the targets by this tag, as no ARN of theirs is
    # known before registration.
    for scalable in (writes, reads):
        Tags.of(cast(Construct, scalable)).add(SCALED_TABLE_TAG, f"table/{table.table_name}")
    for index in spec.indexes:
        capacity = billing.of(f"{name}/{index.name}")
        table.auto_scale_global_secondary_index_write_capacity(
            index.name, min_capacity=capacity.min_write, max_capacity=capacity.max_write
        ).scale_on_utilization(target_utilization_percent=target)
        table.auto_scale_global_secondary_index_read_capacity(
            index.name, min_capacity=capacity.min_read, max_capacity=capacity.max_read
        ).scale_on_utilization(target_utilization_percent=target)


def global_table_name(spec: TableSpec) -> str:
    """A global table's name, the same in every region: Settings' default for its setting
    (`takt-jobs`, ...), so a region's stack names it without a reference across regions, which
    CloudFormation cannot resolve."""
    return str(Settings.model_fields[spec.setting].default)


def _global_table(scope: Construct, spec: TableSpec, regions: RegionPlan) -> dynamodb.TableV2:
    """`spec`'s table as an MREC global table with a replica in every other region of `regions`.

    What the table of one region has, it keeps: on demand, the AWS managed key, point-in-time
    recovery and deletion protection in every replica, TTL (whose deletes replicate), the
    indexes. Every replica has a stream (global tables replicate through it), and each
    region's indexer reads its own replica's (`_replica`).
    """
    return dynamodb.TableV2(
        scope,
        spec.logical_id,
        table_name=global_table_name(spec),
        partition_key=_attribute(spec.partition),
        sort_key=_attribute(spec.sort) if spec.sort else None,
        billing=dynamodb.Billing.on_demand(),
        encryption=dynamodb.TableEncryptionV2.aws_managed_key(),
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        time_to_live_attribute=spec.ttl_attribute,
        dynamo_stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        deletion_protection=True,
        removal_policy=RemovalPolicy.RETAIN,
        global_secondary_indexes=[
            dynamodb.GlobalSecondaryIndexPropsV2(
                index_name=index.name,
                partition_key=_attribute(index.partition),
                sort_key=_attribute(index.sort) if index.sort else None,
                projection_type=_projection(index),
                non_key_attributes=list(index.include) if index.include else None,
            )
            for index in spec.indexes
        ],
        replicas=[dynamodb.ReplicaTableProps(region=region) for region in regions.replicas],
    )


def _lease_table(scope: Construct, regions: RegionPlan) -> dynamodb.TableV2:
    """The `regions` table: an MRSC global table, three replicas or two and a witness.

    A conditional write to it and a strongly consistent read of it hold across regions, which
    makes the lease a compare-and-set with an RPO of 0; a region cut off from the others cannot
    read or renew it, so it stops acting (docs/ARCHITECTURE.md, "Regions"). It holds one item
    and needs no TTL, index or transaction.
    """
    return dynamodb.TableV2(
        scope,
        REGIONS.logical_id,
        table_name=global_table_name(REGIONS),
        partition_key=_attribute(REGIONS.partition),
        billing=dynamodb.Billing.on_demand(),
        encryption=dynamodb.TableEncryptionV2.aws_managed_key(),
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        deletion_protection=True,
        removal_policy=RemovalPolicy.RETAIN,
        multi_region_consistency=dynamodb.MultiRegionConsistency.STRONG,
        witness_region=regions.witness,
        replicas=[dynamodb.ReplicaTableProps(region=region) for region in regions.replicas],
    )


def _replica(scope: Construct, spec: TableSpec) -> dynamodb.ITable:
    """This region's replica of a global table the primary region's stack created.

    Known by name; the jobs table's stream ARN, which the indexer reads, ends in a label
    DynamoDB chose when it created the replica, so it is read once at deployment
    (DescribeTable, `_stream_arn`).
    """
    return dynamodb.TableV2.from_table_attributes(
        scope,
        spec.logical_id,
        table_name=global_table_name(spec),
        grant_index_permissions=bool(spec.indexes),
        table_stream_arn=_stream_arn(scope, spec) if spec.stream else None,
    )


def _stream_arn(scope: Construct, spec: TableSpec) -> str:
    """The stream ARN of this region's replica of `spec`'s table, by DescribeTable."""
    table_arn = Stack.of(scope).format_arn(
        service="dynamodb", resource="table", resource_name=global_table_name(spec)
    )
    describe = cr.AwsSdkCall(
        service="DynamoDB",
        action="describeTable",
        parameters={"TableName": global_table_name(spec)},
        # The stream ARN names the resource: a replica re-created with a new stream replaces it.
        physical_resource_id=cr.PhysicalResourceId.from_response("Table.LatestStreamArn"),
        output_paths=["Table.LatestStreamArn"],
    )
    lookup = cr.AwsCustomResource(
        scope,
        f"{spec.logical_id}Stream",
        on_create=describe,
        on_update=describe,
        policy=cr.AwsCustomResourcePolicy.from_statements(
            [iam.PolicyStatement(actions=["dynamodb:DescribeTable"], resources=[table_arn])]
        ),
        install_latest_aws_sdk=False,
        # One small call per deployment; its logs kept as long as the functions'.
        memory_size=LOOKUP_MEMORY_MB,
        log_group=logs.LogGroup(
            scope, f"{spec.logical_id}StreamLookupLogs", retention=logs.RetentionDays.ONE_MONTH
        ),
    )
    _suppress_lookup_findings(Stack.of(scope))
    return lookup.get_response_field("Table.LatestStreamArn")


# The stream lookup's function: Lambda's smallest size serves one DescribeTable.
LOOKUP_MEMORY_MB = 128
# The logical id the CDK gives the one function behind every AwsCustomResource of a stack.
AWS_CUSTOM_RESOURCE_FUNCTION = "AWS679f53fac002430cb0da5b7982bd2287"


def _suppress_lookup_findings(stack: Stack) -> None:
    """The CDK's own function behind the stream lookup runs once per deployment, with the
    AWS managed policy for its logs; its one other permission is DescribeTable on the table."""
    NagSuppressions.add_resource_suppressions_by_path(
        stack,
        f"/{stack.node.path}/{AWS_CUSTOM_RESOURCE_FUNCTION}/ServiceRole/Resource",
        [
            NagPackSuppression(
                id="AwsSolutions-IAM4",
                reason=(
                    "The CDK's AwsCustomResource function (the replica's stream lookup) writes "
                    "its logs with AWSLambdaBasicExecutionRole; it runs once per deployment."
                ),
                applies_to=[
                    "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                    "AWSLambdaBasicExecutionRole"
                ],
            )
        ],
    )
