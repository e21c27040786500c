"""Workers scaled ahead of the due index: the watchdog's minute step counts what falls due in the
next minutes (COUNT queries of the due index's partitions) and raises the Fargate service's
minimum task count before it does, then lets it fall back once the busy minute has passed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from functions.watchdog.handler import handler as watchdog_handler
from takt.aws import make_autoscaling_client
from takt.clock import ManualClock
from takt.dispatch.ahead import (
    ECS_DESIRED_COUNT,
    TABLE_READ_CAPACITY,
    TABLE_WRITE_CAPACITY,
    DueForecaster,
    FleetPlan,
    Forecast,
)
from takt.observability import listen
from takt.wiring import Services, install
from tests.support.env import ServicesFactory

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _index(svc: Services, count: int, due: datetime) -> None:
    """`count` jobs due at `due`, indexed as the API indexes them (one put each)."""
    for _ in range(count):
        svc.due.put("acme", uuid.uuid4().hex, due, NOON)


@pytest.fixture
def service(moto_endpoint: str) -> str:
    """A moto ECS service registered as a scalable target of 1 to 100 tasks, as the CDK app
    registers the Fargate worker service; returns its resource id."""
    ecs = boto3.client("ecs", region_name="us-east-1", endpoint_url=moto_endpoint)
    cluster = f"takt-{uuid.uuid4().hex[:8]}"
    ecs.create_cluster(clusterName=cluster)
    ecs.register_task_definition(
        family=cluster, containerDefinitions=[{"name": "worker", "image": "takt", "memory": 512}]
    )
    ecs.create_service(cluster=cluster, serviceName="worker", taskDefinition=cluster)
    resource_id = f"service/{cluster}/worker"
    autoscaling = boto3.client(
        "application-autoscaling", region_name="us-east-1", endpoint_url=moto_endpoint
    )
    autoscaling.register_scalable_target(
        ServiceNamespace="ecs",
        ResourceId=resource_id,
        ScalableDimension=ECS_DESIRED_COUNT,
        MinCapacity=1,
        MaxCapacity=100,
    )
    return resource_id


@pytest.fixture
def scaled(make_svc: ServicesFactory, service: str) -> Iterator[Services]:
    """Services whose watchdog scales `service` ahead: 5 minutes counted, 10 slots a task, 30 s
    jobs, 1 to 100 tasks; installed as the process's, so the watchdog handler uses them."""
    svc = make_svc(
        scale_ahead_minutes=5,
        scale_ahead_job_sec=30.0,
        fargate_service=service,
        fargate_slots=10,
        fargate_min_tasks=1,
        fargate_max_tasks=100,
    )
    install(svc)
    try:
        yield svc
    finally:
        install(None)


def _min_tasks(svc: Services, service: str) -> int:
    targets = make_autoscaling_client(svc.settings).describe_scalable_targets(
        ServiceNamespace="ecs", ResourceIds=[service], ScalableDimension=ECS_DESIRED_COUNT
    )["ScalableTargets"]
    return int(targets[0]["MinCapacity"])


def _run_watchdog(svc: Services) -> dict[str, float]:
    """One watchdog invocation (one sweep); the ahead metrics it recorded."""
    seen: dict[str, float] = {}

    def note(name: str, _unit: Any, value: float) -> None:
        seen[name] = value

    stop = listen(note)
    try:
        watchdog_handler({"sweeps": 1}, _Context())
    finally:
        stop()
    return {name: value for name, value in seen.items() if name.endswith("Ahead")}


class _Context:
    function_name = "watchdog"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:watchdog"
    aws_request_id = "req"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def test_the_forecast_counts_each_minute_bucket_over_every_shard(make_svc: ServicesFactory) -> None:
    svc = make_svc()
    _index(svc, 30, NOON + timedelta(minutes=4, seconds=1))
    _index(svc, 7, NOON + timedelta(minutes=2))
    _index(svc, 5, NOON + timedelta(minutes=9))  # beyond the five minutes counted

    forecast = DueForecaster(svc.due, minutes=5, max_pages=4).forecast(NOON + timedelta(seconds=5))

    counts = dict(forecast.minutes)
    assert counts[NOON + timedelta(minutes=4)] == 30
    assert counts[NOON + timedelta(minutes=2)] == 7
    assert len(counts) == 6 and forecast.total == 37 and forecast.peak == 30
    assert forecast.complete


def test_the_plan_sizes_the_busiest_minute_spread_over_it() -> None:
    plan = FleetPlan(job_sec=10.0, slots=200, min_tasks=2, max_tasks=2000)
    top_of_hour = Forecast(minutes=((NOON, 1_000_000),), complete=True)
    # 1,000,000 in a minute of 10 s runs: 166,667 at once, at 80 % of 200 slots a task.
    assert plan.tasks_for(top_of_hour) == 1042
    assert plan.tasks_for(Forecast(minutes=((NOON, 0),), complete=True)) == 2
    assert FleetPlan(10.0, 200, 0, 50).tasks_for(top_of_hour) == 50
    # Two busy minutes are sized for the busier one, not their sum: 9,600 a minute of 10 s runs
    # is 1,600 at once, 10 tasks.
    two = Forecast(minutes=((NOON, 9600), (NOON + timedelta(minutes=1), 9600)), complete=True)
    assert plan.tasks_for(two) == 10


def test_the_watchdog_raises_the_services_minimum_before_the_busy_minute_and_lowers_it_after(
    scaled: Services, service: str, clock: ManualClock
) -> None:
    svc = scaled
    # 300 runs of 30 s in the 12:04 minute: 150 at once, 10 slots a task at 80 % -> 19 tasks.
    _index(svc, 300, NOON + timedelta(minutes=4))
    clock.set(NOON + timedelta(seconds=2))

    published = _run_watchdog(svc)

    assert _min_tasks(svc, service) == 19
    assert published == {"DueAhead": 300, "WorkerTasksAhead": 19}

    # After the busy minute the count falls to nothing and the minimum back to the configured 1.
    clock.set(NOON + timedelta(minutes=5, seconds=2))
    assert _run_watchdog(svc) == {"DueAhead": 0, "WorkerTasksAhead": 1}
    assert _min_tasks(svc, service) == 1


def test_without_a_service_the_watchdog_only_publishes_the_forecast(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(scale_ahead_minutes=2, fargate_slots=10, scale_ahead_job_sec=60.0)
    _index(svc, 16, NOON + timedelta(minutes=1))
    clock.set(NOON)
    install(svc)
    try:
        assert _run_watchdog(svc) == {"DueAhead": 16, "WorkerTasksAhead": 2}
    finally:
        install(None)


def test_the_watchdog_raises_a_provisioned_tables_write_minimum_before_the_busy_minute(
    make_svc: ServicesFactory, moto_endpoint: str, clock: ManualClock
) -> None:
    """The table step on moto (DescribeScalableTargets, DescribeTable, RegisterScalableTarget):
    120 runs of 10 s due at 12:04 write 4 units each on the executions table, 8 a second, at
    70 %: a minimum of 12 raised from 5; the due table's stays at its floor of 60 (1.9 units
    want 6: a table is raised only above its floor). Reads: the jobs table's 3 units a run, 6 a
    second, want 9 at 70 %, raised from its floor of 5; the others' want less than theirs."""
    floors = {"executions": 5, "jobs": 5, "due": 60}
    svc = make_svc(
        scale_ahead_minutes=5,
        table_write_floors=floors,
        table_read_floors={"executions": 5, "jobs": 5, "due": 5},
    )
    autoscaling = boto3.client(
        "application-autoscaling", region_name="us-east-1", endpoint_url=moto_endpoint
    )
    names = {
        "executions": svc.settings.executions_table,
        "jobs": svc.settings.jobs_table,
        "due": svc.settings.due_table,
    }
    for kind, name in names.items():
        for dimension, low in ((TABLE_WRITE_CAPACITY, floors[kind]), (TABLE_READ_CAPACITY, 5)):
            autoscaling.register_scalable_target(
                ServiceNamespace="dynamodb",
                ResourceId=f"table/{name}",
                ScalableDimension=dimension,
                MinCapacity=low,
                MaxCapacity=1000,
            )
    _index(svc, 120, NOON + timedelta(minutes=4))
    clock.set(NOON + timedelta(seconds=2))
    install(svc)
    try:
        _run_watchdog(svc)
    finally:
        install(None)

    minimums = {
        (t["ResourceId"], t["ScalableDimension"]): t["MinCapacity"]
        for t in autoscaling.describe_scalable_targets(ServiceNamespace="dynamodb")[
            "ScalableTargets"
        ]
    }
    assert minimums[(f"table/{names['executions']}", TABLE_WRITE_CAPACITY)] == 12, (
        "raised ahead: 120 in the minute x 4 units / 60 s at 70 %"
    )
    assert minimums[(f"table/{names['due']}", TABLE_WRITE_CAPACITY)] == 60
    assert minimums[(f"table/{names['jobs']}", TABLE_READ_CAPACITY)] == 9, (
        "the reads raised ahead too: 120 in the minute x 3 units / 60 s at 70 %"
    )
    assert minimums[(f"table/{names['executions']}", TABLE_READ_CAPACITY)] == 5
