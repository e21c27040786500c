"""takt's DynamoDB tables, built from `takt.resources.TABLES` so the cloud, moto and the tests
share one definition of every key, index and TTL attribute.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from takt.resources import TABLES, Index, Key, TableSpec

_TYPES = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER}


def _projection(index: Index) -> dynamodb.ProjectionType:
    if index.include is None:
        return dynamodb.ProjectionType.ALL
    return dynamodb.ProjectionType.INCLUDE if index.include else dynamodb.ProjectionType.KEYS_ONLY


def _attribute(key: Key) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=_TYPES[key.type])


class Tables(Construct):
    """The tables: on-demand, encrypted, recoverable, and retained when the stack goes.

    On-demand billing because the load is a sharp burst at the top of each minute over a quiet
    baseline, which provisioned capacity would either throttle or pay for all day. Encryption uses
    the AWS managed key `aws/dynamodb`: no key to pay for or rotate, its use shows in CloudTrail,
    and grants from the stateless stack need no key policy in this one. RETAIN and
    deletion protection because these tables are the jobs and their history: deleting or
    replacing the stack must never delete them.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self._tables: dict[str, dynamodb.Table] = {}
        for spec in TABLES:
            table = dynamodb.Table(
                self,
                spec.logical_id,
                partition_key=_attribute(spec.partition),
                sort_key=_attribute(spec.sort) if spec.sort else None,
                billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
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
                )
            self._tables[spec.logical_id] = table

    def table(self, spec: TableSpec) -> dynamodb.Table:
        """The table built for `spec`."""
        return self._tables[spec.logical_id]

    def all(self) -> list[tuple[TableSpec, dynamodb.Table]]:
        """Every table with its spec, in `TABLES` order."""
        return [(spec, self._tables[spec.logical_id]) for spec in TABLES]
