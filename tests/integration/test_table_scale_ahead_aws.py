"""The watchdog's table step through boto3 against moto: what it asks Application Auto Scaling
and DynamoDB is accepted as sent, it raises the three tables' write and read minimums for a burst
and, once the burst has passed, lowers both minimums and each table's capacity in one
UpdateTable (moto keeps neither target tracking nor DynamoDB's decrease dates: the rules on them
are tests/unit/dispatch/test_table_scale_ahead.py's)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from takt.dispatch.ahead import (
    DYNAMODB_NAMESPACE,
    TABLE_READ_CAPACITY,
    TABLE_WRITE_CAPACITY,
    Forecast,
    ScaledTable,
    TableLoad,
    TableScaleAhead,
    hold_after_increase,
)

NOW = datetime(2026, 3, 2, 12, 1, tzinfo=UTC)
LOAD = TableLoad(job_sec=10, heartbeat_sec=15, target_utilization=70)
RAISED = (30000, 9000)


@pytest.fixture
def clients(moto_endpoint: str) -> tuple[Any, Any]:
    return (
        boto3.client(
            "application-autoscaling", region_name="us-east-1", endpoint_url=moto_endpoint
        ),
        boto3.client("dynamodb", region_name="us-east-1", endpoint_url=moto_endpoint),
    )


def _tables(autoscaling: Any, dynamodb: Any) -> tuple[ScaledTable, ...]:
    """Three provisioned tables held at a burst's capacity, their targets' minimums with it."""
    uid = uuid.uuid4().hex[:8]
    tables = (
        ScaledTable("executions", f"executions-{uid}", 5, 5),
        ScaledTable("jobs", f"jobs-{uid}", 5, 5),
        ScaledTable("due", f"due-{uid}", 5, 120),
    )
    for table in tables:
        dynamodb.create_table(
            TableName=table.name,
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            ProvisionedThroughput={"WriteCapacityUnits": RAISED[0], "ReadCapacityUnits": RAISED[1]},
        )
        for dimension, low in ((TABLE_WRITE_CAPACITY, RAISED[0]), (TABLE_READ_CAPACITY, RAISED[1])):
            autoscaling.register_scalable_target(
                ServiceNamespace=DYNAMODB_NAMESPACE,
                ResourceId=table.resource_id,
                ScalableDimension=dimension,
                MinCapacity=low,
                MaxCapacity=80000,
            )
    return tables


def _minimums(autoscaling: Any, tables: tuple[ScaledTable, ...]) -> dict[tuple[str, str], int]:
    targets = autoscaling.describe_scalable_targets(
        ServiceNamespace=DYNAMODB_NAMESPACE, ResourceIds=[t.resource_id for t in tables]
    )["ScalableTargets"]
    return {(t["ResourceId"], t["ScalableDimension"]): t["MinCapacity"] for t in targets}


def test_a_passed_burst_lowers_each_tables_minimums_and_capacity_to_its_floors(
    clients: tuple[Any, Any],
) -> None:
    autoscaling, dynamodb = clients
    tables = _tables(autoscaling, dynamodb)
    step = TableScaleAhead(tables, LOAD, autoscaling, dynamodb, hold_after_increase(5))

    steps = step.step(Forecast(minutes=((NOW, 0),), complete=True), NOW)

    assert _minimums(autoscaling, tables) == {
        (t.resource_id, dimension): floor
        for t in tables
        for dimension, floor in (
            (TABLE_WRITE_CAPACITY, t.floor),
            (TABLE_READ_CAPACITY, t.read_floor),
        )
    }
    for table in tables:
        throughput = dynamodb.describe_table(TableName=table.name)["Table"]["ProvisionedThroughput"]
        assert (throughput["WriteCapacityUnits"], throughput["ReadCapacityUnits"]) == (
            table.floor,
            table.read_floor,
        ), f"{table.name} lowered to its floors, both ways in one UpdateTable"
    assert all(s.lowered for s in steps)


def test_a_burst_ahead_raises_both_minimums_of_each_table(clients: tuple[Any, Any]) -> None:
    autoscaling, dynamodb = clients
    tables = _tables(autoscaling, dynamodb)
    step = TableScaleAhead(tables, LOAD, autoscaling, dynamodb, hold_after_increase(5))

    # The seed's top of the hour: 1,084,000 executions in the minute, 18,067 a second.
    step.step(Forecast(minutes=((NOW, 1_084_000),), complete=True), NOW)

    minimums = _minimums(autoscaling, tables)
    jobs, executions = tables[1].resource_id, tables[0].resource_id
    assert minimums[(jobs, TABLE_READ_CAPACITY)] == 77429, "3 read units a run at 70 %"
    assert minimums[(executions, TABLE_WRITE_CAPACITY)] == 77429, "3 write units a run at 70 %"
    assert minimums[(tables[2].resource_id, TABLE_WRITE_CAPACITY)] == 51620, "2 write units a run"
