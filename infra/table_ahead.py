"""The watchdog raises the provisioned tables' write capacity ahead of the due index
(`takt.dispatch.ahead.TableScaleAhead`), with `tableBilling=provisioned` in one region.

It may change exactly six scalable targets: the executions, jobs and due tables' write and read
capacity. RegisterScalableTarget accepts the scalable-target resource type, whose ARN ends in an
id Application Auto Scaling assigns at registration (CloudFormation returns no ARN), and the
keys aws:ResourceTag, service-namespace and scalable-dimension; so each of the six targets is
tagged with its resource id (`table/<name>`) in the stateful stack, and the watchdog's grant is
conditional on that tag, the DynamoDB namespace and the table write and read dimensions, as the
Fargate service's is (infra/worker_service.py). What Application Auto Scaling checks on the
caller's behalf when it registers a DynamoDB target (DescribeTable, UpdateTable), the budget the
step reads (DescribeTable) and its lowering of a table's capacity after a burst (UpdateTable)
are granted on those three tables alone.
"""

from __future__ import annotations

import json

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from cdk_nag import NagPackSuppression, NagSuppressions, RegexAppliesTo
from constructs import Construct

from infra.context import DeployConfig, settings_env_var
from infra.tables import SCALED_TABLE_TAG, TableBilling, Tables
from takt.dispatch.ahead import DYNAMODB_NAMESPACE, TABLE_READ_CAPACITY, TABLE_WRITE_CAPACITY
from takt.resources import DUE, EXECUTIONS, JOBS

# The tables the step raises, by the kind `takt.dispatch.ahead.WRITE_UNITS_PER_EXECUTION` keys.
SCALED_TABLES = {"executions": EXECUTIONS, "jobs": JOBS, "due": DUE}
# How far ahead the due index is counted when no Fargate service sets it: a table's increase
# takes minutes when it adds partitions, and the step runs once a minute.
TABLE_SCALE_AHEAD_MINUTES = 5


def scale_tables_ahead(
    watchdog: lambda_.Function, tables: Tables, billing: TableBilling, config: DeployConfig
) -> None:
    """The watchdog's settings and grants for the table step (stateless stack)."""
    fargate = config.fargate
    ahead_on_fargate = (
        fargate is not None
        and fargate.max_tasks > fargate.min_tasks
        and fargate.scale_ahead_minutes
    )
    # One forecast serves both steps: the Fargate service's horizon when it has one (its
    # construct sets the same value), else the tables' own.
    minutes = fargate.scale_ahead_minutes if fargate and ahead_on_fargate else None
    capacity = {kind: billing.of(spec.logical_id.lower()) for kind, spec in SCALED_TABLES.items()}
    values = {
        "scale_ahead_minutes": str(minutes or TABLE_SCALE_AHEAD_MINUTES),
        "table_write_floors": json.dumps({kind: c.min_write for kind, c in capacity.items()}),
        "table_read_floors": json.dumps({kind: c.min_read for kind, c in capacity.items()}),
        "table_target_utilization": str(billing.target_utilization),
    }
    if fargate is not None:
        values["scale_ahead_job_sec"] = str(fargate.job_sec)
    for field, value in values.items():
        watchdog.add_environment(settings_env_var(field), value)
    scaled = [tables.table(spec) for spec in SCALED_TABLES.values()]
    tables.grant(DUE, watchdog, write=False)
    watchdog.add_to_role_policy(
        iam.PolicyStatement(
            actions=["application-autoscaling:DescribeScalableTargets"], resources=["*"]
        )
    )
    watchdog.add_to_role_policy(
        iam.PolicyStatement(
            actions=["application-autoscaling:RegisterScalableTarget"],
            resources=[_scalable_targets(watchdog)],
            conditions={
                "StringEquals": {
                    f"aws:ResourceTag/{SCALED_TABLE_TAG}": [
                        f"table/{table.table_name}" for table in scaled
                    ],
                    "application-autoscaling:service-namespace": DYNAMODB_NAMESPACE,
                    "application-autoscaling:scalable-dimension": [
                        TABLE_WRITE_CAPACITY,
                        TABLE_READ_CAPACITY,
                    ],
                }
            },
        )
    )
    watchdog.add_to_role_policy(
        iam.PolicyStatement(
            actions=["dynamodb:DescribeTable", "dynamodb:UpdateTable"],
            resources=[table.table_arn for table in scaled],
        )
    )
    _suppress_findings(watchdog)


def _scalable_targets(scope: Construct) -> str:
    return Stack.of(scope).format_arn(
        service="application-autoscaling", resource="scalable-target", resource_name="*"
    )


def _suppress_findings(watchdog: lambda_.Function) -> None:
    NagSuppressions.add_resource_suppressions(
        watchdog.role,  # type: ignore[arg-type]
        [
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason=(
                    "Application Auto Scaling's DescribeScalableTargets accepts no "
                    "resource-level permission; RegisterScalableTarget is limited to the three "
                    "tables' write and read targets, tagged with their resource ids, whose ARNs' "
                    "ids are assigned at registration."
                ),
                applies_to=[
                    "Resource::*",
                    RegexAppliesTo(
                        regex="/^Resource::arn:.*:application-autoscaling:.*:scalable-target\\/\\*$/g"
                    ),
                ],
            )
        ],
        apply_to_children=True,
    )
