"""Provisioned tables raised ahead of the due index, both ways, and lowered within DynamoDB's
decreases (27 a UTC day: four at any time, then one an hour with none before it) once the burst
and its tail have passed: `planned_minimum` on an injected clock, and the step on fakes of
Application Auto Scaling, DescribeTable and UpdateTable."""

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
    ANY_TIME_DECREASES,
    DECREASE_SPACING,
    MAX_DECREASES_A_DAY,
    SPARE_DECREASES,
    TABLE_READ_CAPACITY,
    TABLE_WRITE_CAPACITY,
    Decreases,
    FleetPlan,
    Forecast,
    ScaleAhead,
    ScaledTable,
    TableLoad,
    TableScaleAhead,
    Units,
    hold_after_increase,
    planned_minimum,
)

MIDNIGHT = datetime(2026, 3, 2, tzinfo=UTC)
FLOOR, BUSY = Units(8000, 1000), Units(20000, 9000)
# What a table the fakes describe holds: raised for a burst.
RAISED = Units(30000, 9000)
# The seed's five minutes ahead: a burst's capacity is held 7 minutes after its raise.
HOLD = hold_after_increase(5)


@dataclass
class _Table:
    """A provisioned table as DynamoDB keeps it: the capacity follows a raised minimum up at
    once (an increase, which DescribeTable dates); the step's lowering brings it down to a
    lowered one (a decrease, counted by DynamoDB's rule)."""

    minimum: Units = FLOOR
    capacity: Units = FLOOR
    decreases: list[datetime] = field(default_factory=list)
    increased: datetime | None = None

    def state(self, now: datetime) -> Decreases:
        today = [at for at in self.decreases if at.date() == now.date()]
        return Decreases(len(today), self.decreases[-1] if self.decreases else None, self.increased)

    def follow(self, now: datetime) -> None:
        if self.minimum.below(self.capacity):
            assert _dynamodb_allows(self.decreases, now), "a decrease DynamoDB would refuse"
            self.capacity = self.minimum
            self.decreases.append(now)
        elif self.capacity.below(self.minimum):
            self.capacity = self.minimum
            self.increased = now


def _dynamodb_allows(decreases: list[datetime], now: datetime) -> bool:
    today = [at for at in decreases if at.date() == now.date()]
    if len(today) < 4:
        return True
    return len(today) < MAX_DECREASES_A_DAY and now - today[-1] >= DECREASE_SPACING


def _run_day(table: _Table, wanted_at: Callable[[datetime], Units], days: int = 1) -> list[Units]:
    """Every minute of `days`: the watchdog's step, then the table following its minimum.
    Returns the minimum held at each minute."""
    held = []
    for minute in range(days * 24 * 60):
        now = MIDNIGHT + timedelta(minutes=minute)
        table.minimum = planned_minimum(
            wanted_at(now), table.minimum, partial(table.state, now), now, HOLD
        )
        table.follow(now)
        held.append(table.minimum)
    return held


def _burst_at_the_top_of_every_hour(now: datetime) -> Units:
    """The forecast of a 5-minute scale-ahead: busy from 5 minutes before each hour to its
    first minute."""
    return BUSY if now.minute >= 55 or now.minute == 0 else FLOOR


def test_a_burst_every_hour_is_raised_ahead_held_through_its_tail_and_lowered_minutes_later() -> (
    None
):
    table = _Table()

    held = _run_day(table, _burst_at_the_top_of_every_hour, days=2)

    for hour in range(1, 48):
        top = hour * 60
        assert held[top - 5] == BUSY, f"raised 5 minutes before hour {hour}"
        assert held[top + 1] == BUSY, f"held through the minute after hour {hour}: its tail"
        assert held[top + 2] == FLOOR, f"lowered 7 minutes after its raise, hour {hour}"
        assert held[top - 30 : top + 30].count(BUSY) == HOLD // timedelta(minutes=1), (
            "the burst's capacity held for the hold's minutes, as the cost model prices it"
        )
    days = [(MIDNIGHT + timedelta(days=day)).date() for day in (0, 1)]
    per_day = [sum(1 for at in table.decreases if at.date() == day) for day in days]
    assert max(per_day) <= MAX_DECREASES_A_DAY, (
        f"a burst every hour spends at most DynamoDB's 27 decreases a day: {per_day}"
    )
    _assert_spaced(table.decreases)


def _assert_spaced(decreases: list[datetime]) -> None:
    """At most the two of the four any-time decreases the step may take a day within an hour of
    the one before; every other an hour or more after it."""
    quick = [
        later.date() for earlier, later in pairwise(decreases) if later - earlier < DECREASE_SPACING
    ]
    assert all(quick.count(day) <= ANY_TIME_DECREASES - SPARE_DECREASES for day in quick), (
        f"decreases within the hour of another: {quick}"
    )


def test_a_flapping_forecast_spends_at_most_one_decrease_an_hour() -> None:
    table = _Table()

    _run_day(table, lambda now: BUSY if now.minute % 2 else FLOOR)

    assert len(table.decreases) <= MAX_DECREASES_A_DAY - SPARE_DECREASES, (
        f"a forecast flapping every minute spent {len(table.decreases)} decreases in a day: "
        "the budget is DynamoDB's 27, two of them kept for target tracking's own"
    )
    _assert_spaced(table.decreases)


def test_a_raise_never_waits_for_the_budget() -> None:
    spent = Decreases(today=MAX_DECREASES_A_DAY, last=MIDNIGHT)

    assert planned_minimum(BUSY, FLOOR, lambda: spent, MIDNIGHT) == BUSY
    assert planned_minimum(Units(8000, 9000), Units(20000, 1000), lambda: spent, MIDNIGHT) == (
        Units(20000, 9000)
    ), "reads raised while writes are held: one way's raise never lowers the other"
    assert planned_minimum(FLOOR, BUSY, lambda: spent, MIDNIGHT + timedelta(hours=3)) == BUSY, (
        "the day's 27 decreases spent: the minimum is held until tomorrow"
    )


def test_a_capacity_is_not_lowered_within_the_hold_after_its_last_increase() -> None:
    raised = MIDNIGHT + timedelta(hours=3)
    state = Decreases(today=2, last=MIDNIGHT, last_increase=raised)

    assert planned_minimum(
        FLOOR, BUSY, lambda: state, raised + HOLD - timedelta(seconds=1), HOLD
    ) == (BUSY), "the burst's minute and its tail keep the raised capacity"
    assert planned_minimum(FLOOR, BUSY, lambda: state, raised + HOLD, HOLD) == FLOOR


def test_a_small_fall_in_the_forecast_keeps_the_minimum_and_asks_nothing() -> None:
    def never() -> Decreases:
        raise AssertionError("DescribeTable is asked only when a lowering is planned")

    assert planned_minimum(Units(19000, 8000), BUSY, never, MIDNIGHT) == BUSY


def test_the_days_count_starts_again_at_midnight_utc() -> None:
    yesterday = Decreases(today=MAX_DECREASES_A_DAY, last=MIDNIGHT - timedelta(hours=2))

    assert yesterday.allow_one(MIDNIGHT), "DynamoDB resets the day's count at midnight UTC"
    # 03:00 UTC is 22:00 the day before in New York: its count is still today's (UTC).
    eastern = timezone(timedelta(hours=-5))
    spent = Decreases(MAX_DECREASES_A_DAY, (MIDNIGHT + timedelta(hours=3)).astimezone(eastern))
    assert not spent.allow_one(MIDNIGHT + timedelta(hours=8)), (
        "a day's 27 decreases are counted by UTC's day, in whichever zone botocore gives the time"
    )
    assert not Decreases(today=2, last=MIDNIGHT).allow_one(MIDNIGHT + timedelta(minutes=59)), (
        "within the hour, only while two of the four any-time decreases are left"
    )
    assert Decreases(today=1, last=MIDNIGHT).allow_one(MIDNIGHT + timedelta(minutes=59))


class _Autoscaling:
    """Application Auto Scaling's targets: (resource id, dimension) -> (min, max)."""

    def __init__(self, targets: dict[tuple[str, str], tuple[int, int]]) -> None:
        self.targets = targets
        self.registered: list[dict[str, Any]] = []

    def describe_scalable_targets(self, **request: Any) -> dict[str, Any]:
        assert "ScalableDimension" not in request, "one call for both ways"
        return {
            "ScalableTargets": [
                {
                    "ResourceId": rid,
                    "ScalableDimension": dimension,
                    "MinCapacity": low,
                    "MaxCapacity": high,
                }
                for (rid, dimension), (low, high) in self.targets.items()
                if rid in request["ResourceIds"]
            ]
        }

    def register_scalable_target(self, **request: Any) -> None:
        self.registered.append(request)

    def minimums(self) -> dict[tuple[str, str], int]:
        return {
            (r["ResourceId"], r["ScalableDimension"]): r["MinCapacity"] for r in self.registered
        }


class _DynamoDb:
    """DescribeTable's throughput of every table, and the UpdateTable calls made."""

    def __init__(
        self,
        last: datetime | None,
        increased: datetime | None = None,
        capacity: Units = RAISED,
        refuse: bool = False,
        today: int = 2,
    ) -> None:
        self.today = today
        self.last = last
        self.increased = increased
        self.capacity = capacity
        self.refuse = refuse
        self.updates: list[dict[str, Any]] = []

    def describe_table(self, TableName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        throughput: dict[str, Any] = {
            "NumberOfDecreasesToday": self.today,
            "WriteCapacityUnits": self.capacity.write,
            "ReadCapacityUnits": self.capacity.read,
        }
        if self.last is not None:
            throughput["LastDecreaseDateTime"] = self.last
        if self.increased is not None:
            throughput["LastIncreaseDateTime"] = self.increased
        return {"Table": {"TableName": TableName, "ProvisionedThroughput": throughput}}

    def update_table(self, **request: Any) -> None:
        if self.refuse:
            raise ClientError({"Error": {"Code": "LimitExceededException"}}, "UpdateTable")
        self.updates.append(request)


TABLES = (
    ScaledTable("executions", "t-executions", 8000, 1000),
    ScaledTable("jobs", "t-jobs", 2400, 6000),
    ScaledTable("due", "t-due", 4000, 200),
)
LOAD = TableLoad(job_sec=10, heartbeat_sec=10, target_utilization=70)
BOTH = (TABLE_WRITE_CAPACITY, TABLE_READ_CAPACITY)


def _targets(low: int, high: int) -> dict[tuple[str, str], tuple[int, int]]:
    return {(t.resource_id, dimension): (low, high) for t in TABLES for dimension in BOTH}


def _forecast(peak: int) -> Forecast:
    return Forecast(minutes=((MIDNIGHT, peak),), complete=True)


def test_the_step_raises_each_tables_minimums_to_the_busiest_minutes_units() -> None:
    autoscaling = _Autoscaling(
        {
            **{(t.resource_id, TABLE_WRITE_CAPACITY): (t.floor, 40000) for t in TABLES},
            **{(t.resource_id, TABLE_READ_CAPACITY): (t.read_floor, 40000) for t in TABLES},
        }
    )
    step = TableScaleAhead(TABLES, LOAD, autoscaling, _DynamoDb(None), HOLD)

    # 1,400/s and a million more in the minute: 1,084,000 executions.
    steps = step.step(_forecast(1_084_000), MIDNIGHT)

    per_sec = 1_084_000 / 60
    assert autoscaling.minimums() == {
        # 4 and 2 units want 103,238 and 51,620: held at the targets' maximum.
        ("table/t-executions", TABLE_WRITE_CAPACITY): 40000,
        ("table/t-jobs", TABLE_WRITE_CAPACITY): pytest.approx(per_sec * 1.2 / 0.7, abs=1),
        ("table/t-due", TABLE_WRITE_CAPACITY): 40000,
        ("table/t-executions", TABLE_READ_CAPACITY): pytest.approx(per_sec * 0.5 / 0.7, abs=1),
        # 3 units a run (the claim's, the lease's check, the read after a success): 77,429.
        ("table/t-jobs", TABLE_READ_CAPACITY): 40000,
        ("table/t-due", TABLE_READ_CAPACITY): pytest.approx(per_sec * 0.1 / 0.7, abs=1),
    }, "units per execution x the minute's count / 60, at 70 %, within the target's maximum"
    jobs = steps[1]
    assert (jobs.previous, jobs.minimum.read, jobs.lowered) == (Units(2400, 6000), 40000, False)


def test_the_step_lowers_minimums_and_capacity_together_an_hour_after_a_decrease() -> None:
    autoscaling = _Autoscaling(_targets(30000, 40000))
    now = MIDNIGHT + timedelta(hours=5)
    recent = _DynamoDb(now - timedelta(minutes=59))
    TableScaleAhead(TABLES, LOAD, autoscaling, recent, HOLD).step(_forecast(84_000), now)
    assert (autoscaling.registered, recent.updates) == ([], []), (
        "a decrease within the hour is not planned"
    )

    dynamodb = _DynamoDb(now - DECREASE_SPACING, increased=now - HOLD)
    steps = TableScaleAhead(TABLES, LOAD, autoscaling, dynamodb, HOLD).step(_forecast(84_000), now)

    assert autoscaling.minimums() == {
        (t.resource_id, dimension): floor
        for t in TABLES
        for dimension, floor in (
            (TABLE_WRITE_CAPACITY, t.floor),
            (TABLE_READ_CAPACITY, t.read_floor),
        )
    }, "the steady 1,400/s wants less than each profile's floors: back to the floors"
    assert dynamodb.updates == [
        {
            "TableName": t.name,
            "ProvisionedThroughput": {
                "ReadCapacityUnits": t.read_floor,
                "WriteCapacityUnits": t.floor,
            },
        }
        for t in TABLES
    ], "each table's capacity lowered to its floors in one UpdateTable: one decrease, both ways"
    assert all(s.lowered for s in steps)


def test_the_step_keeps_a_burst_raised_within_the_hold_after_its_increase() -> None:
    autoscaling = _Autoscaling(_targets(30000, 40000))
    now = MIDNIGHT + timedelta(hours=5)
    dynamodb = _DynamoDb(now - DECREASE_SPACING, increased=now - HOLD + timedelta(seconds=30))

    TableScaleAhead(TABLES, LOAD, autoscaling, dynamodb, HOLD).step(_forecast(84_000), now)

    assert (autoscaling.registered, dynamodb.updates) == ([], []), (
        "raised 5 minutes ahead, a burst keeps its capacity through its minute and the next"
    )


def test_a_refused_lowering_leaves_the_capacity_to_target_tracking() -> None:
    autoscaling = _Autoscaling(_targets(30000, 40000))
    now = MIDNIGHT + timedelta(hours=5)
    dynamodb = _DynamoDb(now - DECREASE_SPACING, refuse=True)

    steps = TableScaleAhead(TABLES, LOAD, autoscaling, dynamodb, HOLD).step(_forecast(84_000), now)

    assert len(autoscaling.registered) == 6, "the minimums fall all the same"
    assert [s.lowered for s in steps] == [False] * 3


def test_a_capacity_already_at_the_floor_is_not_updated() -> None:
    autoscaling = _Autoscaling(_targets(30000, 40000))
    now = MIDNIGHT + timedelta(hours=5)
    dynamodb = _DynamoDb(now - DECREASE_SPACING, capacity=Units(5000, 500))

    steps = TableScaleAhead(TABLES, LOAD, autoscaling, dynamodb, HOLD).step(_forecast(84_000), now)

    assert [(u["TableName"], u["ProvisionedThroughput"]) for u in dynamodb.updates] == [
        ("t-jobs", {"ReadCapacityUnits": 500, "WriteCapacityUnits": 2400}),
        ("t-due", {"ReadCapacityUnits": 200, "WriteCapacityUnits": 4000}),
    ], "never raised by the lowering: each way at most what it holds (the executions' is there)"
    assert [s.lowered for s in steps] == [False, True, True]


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
        TableScaleAhead(TABLES, LOAD, autoscaling, _DynamoDb(None), HOLD),
    )

    with pytest.raises(ClientError):
        step.step(MIDNIGHT)

    assert [r["ResourceId"] for r in autoscaling.registered] == ["service/c/worker"], (
        "the Fargate fleet is sized before the tables, so a table's error does not stop it"
    )
