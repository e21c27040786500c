"""Provisioned tables raised ahead of the due index, and let fall back within DynamoDB's decreases
(27 a UTC day: four at any time, then one an hour with none before it): `planned_minimum` on an
injected clock, and the step on fakes of Application Auto Scaling and DescribeTable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from itertools import pairwise
from typing import Any

import pytest
from botocore.exceptions import ClientError

from takt.dispatch.ahead import (
    DECREASE_SPACING,
    MAX_DECREASES_A_DAY,
    TABLE_WRITE_CAPACITY,
    Decreases,
    FleetPlan,
    Forecast,
    ScaleAhead,
    ScaledTable,
    TableLoad,
    TableScaleAhead,
    planned_minimum,
)

MIDNIGHT = datetime(2026, 3, 2, tzinfo=UTC)
FLOOR, BUSY = 8000, 20000


@dataclass
class _Table:
    """A provisioned table as DynamoDB and target tracking keep it: the capacity follows the
    minimum up at once; once the minimum is lowered, target tracking brings the capacity down
    to it (a decrease) as soon as DynamoDB's rule allows one, which DynamoDB counts."""

    minimum: int = FLOOR
    capacity: int = FLOOR
    decreases: list[datetime] = field(default_factory=list)

    def state(self, now: datetime) -> Decreases:
        today = [at for at in self.decreases if at.date() == now.date()]
        return Decreases(len(today), self.decreases[-1] if self.decreases else None)

    def follow(self, now: datetime) -> None:
        if self.minimum > self.capacity:
            self.capacity = self.minimum
        elif self.minimum < self.capacity and _dynamodb_allows(self.decreases, now):
            self.capacity = self.minimum
            self.decreases.append(now)


def _dynamodb_allows(decreases: list[datetime], now: datetime) -> bool:
    today = [at for at in decreases if at.date() == now.date()]
    if len(today) < 4:
        return True
    return len(today) < MAX_DECREASES_A_DAY and now - today[-1] >= DECREASE_SPACING


def _run_day(table: _Table, wanted_at: Callable[[datetime], int], days: int = 1) -> list[int]:
    """Every minute of `days`: the watchdog's step, then the table following its minimum.
    Returns the minimum held at each minute."""
    held = []
    for minute in range(days * 24 * 60):
        now = MIDNIGHT + timedelta(minutes=minute)
        table.minimum = planned_minimum(
            wanted_at(now), table.minimum, partial(table.state, now), now
        )
        table.follow(now)
        held.append(table.minimum)
    return held


def _burst_at_the_top_of_every_hour(now: datetime) -> int:
    """The forecast of a 5-minute scale-ahead: busy from 5 minutes before each hour to its
    first minute."""
    return BUSY if now.minute >= 55 or now.minute == 0 else FLOOR


def test_a_burst_every_hour_is_raised_ahead_and_falls_back_each_hour_within_the_budget() -> None:
    table = _Table()

    held = _run_day(table, _burst_at_the_top_of_every_hour, days=2)

    for hour in range(1, 48):
        top = hour * 60
        assert held[top - 5] == BUSY, f"raised 5 minutes before hour {hour}"
        assert FLOOR in held[top + 1 : top + 55], f"lowered again within hour {hour}"
    days = [(MIDNIGHT + timedelta(days=day)).date() for day in (0, 1)]
    per_day = [sum(1 for at in table.decreases if at.date() == day) for day in days]
    assert max(per_day) <= MAX_DECREASES_A_DAY, (
        f"a burst every hour spends at most DynamoDB's 27 decreases a day: {per_day}"
    )
    gaps = [later - earlier for earlier, later in pairwise(table.decreases)]
    assert min(gaps) >= DECREASE_SPACING, "never more than one planned decrease an hour"


def test_a_flapping_forecast_spends_at_most_one_decrease_an_hour() -> None:
    table = _Table()

    _run_day(table, lambda now: BUSY if now.minute % 2 else FLOOR)

    assert len(table.decreases) <= 24, (
        f"a forecast flapping every minute spent {len(table.decreases)} decreases in a day: "
        "the budget is DynamoDB's 27, four of them kept for target tracking's own"
    )
    gaps = [later - earlier for earlier, later in pairwise(table.decreases)]
    assert min(gaps) >= DECREASE_SPACING


def test_a_raise_never_waits_for_the_budget() -> None:
    spent = Decreases(today=MAX_DECREASES_A_DAY, last=MIDNIGHT)

    assert planned_minimum(BUSY, FLOOR, lambda: spent, MIDNIGHT) == BUSY
    assert planned_minimum(FLOOR, BUSY, lambda: spent, MIDNIGHT + timedelta(hours=3)) == BUSY, (
        "the day's 27 decreases spent: the minimum is held until tomorrow"
    )


def test_a_small_fall_in_the_forecast_keeps_the_minimum_and_asks_nothing() -> None:
    def never() -> Decreases:
        raise AssertionError("DescribeTable is asked only when a lowering is planned")

    assert planned_minimum(BUSY - 1000, BUSY, never, MIDNIGHT) == BUSY


def test_the_days_count_starts_again_at_midnight_utc() -> None:
    yesterday = Decreases(today=MAX_DECREASES_A_DAY, last=MIDNIGHT - timedelta(hours=2))

    assert yesterday.allow_one(MIDNIGHT), "DynamoDB resets the day's count at midnight UTC"
    # 03:00 UTC is 22:00 the day before in New York: its count is still today's (UTC).
    eastern = timezone(timedelta(hours=-5))
    spent = Decreases(MAX_DECREASES_A_DAY, (MIDNIGHT + timedelta(hours=3)).astimezone(eastern))
    assert not spent.allow_one(MIDNIGHT + timedelta(hours=8)), (
        "a day's 27 decreases are counted by UTC's day, in whichever zone botocore gives the time"
    )
    assert not Decreases(today=1, last=MIDNIGHT).allow_one(MIDNIGHT + timedelta(minutes=59))


class _Autoscaling:
    def __init__(self, targets: dict[str, tuple[int, int]]) -> None:
        self.targets = targets
        self.registered: list[dict[str, Any]] = []

    def describe_scalable_targets(self, **request: Any) -> dict[str, Any]:
        assert request["ScalableDimension"] == TABLE_WRITE_CAPACITY
        return {
            "ScalableTargets": [
                {"ResourceId": rid, "MinCapacity": low, "MaxCapacity": high}
                for rid, (low, high) in self.targets.items()
                if rid in request["ResourceIds"]
            ]
        }

    def register_scalable_target(self, **request: Any) -> None:
        self.registered.append(request)


class _DynamoDb:
    def __init__(self, last: datetime | None) -> None:
        self.last = last

    def describe_table(self, TableName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        throughput: dict[str, Any] = {"NumberOfDecreasesToday": 1}
        if self.last is not None:
            throughput["LastDecreaseDateTime"] = self.last
        return {"Table": {"TableName": TableName, "ProvisionedThroughput": throughput}}


TABLES = (
    ScaledTable("executions", "t-executions", 8000),
    ScaledTable("jobs", "t-jobs", 2400),
    ScaledTable("due", "t-due", 4000),
)
LOAD = TableLoad(job_sec=10, heartbeat_sec=10, target_utilization=70)


def _forecast(peak: int) -> Forecast:
    return Forecast(minutes=((MIDNIGHT, peak),), complete=True)


def test_the_step_raises_each_tables_write_minimum_to_the_busiest_minutes_units() -> None:
    autoscaling = _Autoscaling(
        {t.resource_id: (t.floor, 40000) for t in TABLES},
    )
    step = TableScaleAhead(TABLES, LOAD, autoscaling, _DynamoDb(None))

    # 1,400/s and a million more in the minute: 1,084,000 executions.
    steps = step.step(_forecast(1_084_000), MIDNIGHT)

    raised = {r["ResourceId"]: r["MinCapacity"] for r in autoscaling.registered}
    per_sec = 1_084_000 / 60
    assert raised == {
        # 4 and 1.9 units want 103,238 and 49,039: held at the targets' maximum.
        "table/t-executions": 40000,
        "table/t-jobs": pytest.approx(per_sec * 1.2 / 0.7, abs=1),
        "table/t-due": 40000,
    }, "units per execution x the minute's count / 60, at 70 %, within the target's maximum"
    assert [(s.previous_min, s.minimum) for s in steps][1] == (2400, raised["table/t-jobs"])


def test_the_step_lets_a_minimum_fall_back_to_the_floor_only_an_hour_after_the_last_decrease() -> (
    None
):
    autoscaling = _Autoscaling({t.resource_id: (30000, 40000) for t in TABLES})
    now = MIDNIGHT + timedelta(hours=5)
    recent = TableScaleAhead(TABLES, LOAD, autoscaling, _DynamoDb(now - timedelta(minutes=59)))

    recent.step(_forecast(84_000), now)
    assert autoscaling.registered == [], "a decrease within the hour is not planned"

    TableScaleAhead(TABLES, LOAD, autoscaling, _DynamoDb(now - DECREASE_SPACING)).step(
        _forecast(84_000), now
    )
    assert {r["ResourceId"]: r["MinCapacity"] for r in autoscaling.registered} == {
        "table/t-executions": 8000,
        "table/t-jobs": 2400,
        "table/t-due": 4000,
    }, "the steady 1,400/s wants less than each profile's floor: back to the floors"


class _Forecaster:
    def forecast(self, now: datetime) -> Forecast:
        return _forecast(120_000)


class _FailingAutoscaling(_Autoscaling):
    def describe_scalable_targets(self, **request: Any) -> dict[str, Any]:
        if request["ServiceNamespace"] == "dynamodb":
            raise ClientError({"Error": {"Code": "ThrottlingException"}}, "Describe")
        return {"ScalableTargets": [{"MinCapacity": 1, "MaxCapacity": 100}]}


def test_a_failing_table_step_leaves_the_fleet_sized_first() -> None:
    autoscaling = _FailingAutoscaling({})
    step = ScaleAhead(
        _Forecaster(),  # type: ignore[arg-type]
        FleetPlan(job_sec=10, slots=200, min_tasks=1, max_tasks=100),
        autoscaling,
        "service/c/worker",
        TableScaleAhead(TABLES, LOAD, autoscaling, _DynamoDb(None)),
    )

    with pytest.raises(ClientError):
        step.step(MIDNIGHT)

    assert [r["ResourceId"] for r in autoscaling.registered] == ["service/c/worker"], (
        "the Fargate fleet is sized before the tables, so a table's error does not stop it"
    )
