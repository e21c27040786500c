"""Workers scaled ahead of the due index: what is due in the next minutes sizes the Fargate service
before it falls due.

The due index is partitioned by (minute bucket, shard), so what falls due in a coming minute is
already written down, minutes ahead: counting it is N eventually consistent COUNT queries per
minute (one per shard; N*k for a minute split k ways, `takt.store.due`), at most
`scale_ahead_count_pages` pages each, whatever the minute holds.
The count is a forecast, not a claim: items written, moved or claimed meanwhile make it a little
off, which only changes how many tasks start, never what runs.

Once a minute the watchdog (functions/watchdog) takes `ScaleAhead.step`: it counts this minute and
the next `scale_ahead_minutes`, publishes the busiest minute's count (`DueAhead`) and the tasks it
wants (`WorkerTasksAhead`), and raises the Fargate service's minimum task count (Application Auto
Scaling's `MinCapacity`) to those tasks. A task takes about a minute to start, so five minutes
ahead starts the fleet before the top of the hour; once the busy minute has passed, the minimum
falls back and the service's own policies (busy slots, waiting messages, idle) take it down.
Raising the minimum rather than setting the desired count keeps one owner of the desired count,
Application Auto Scaling: a desired count set beside it would be undone by its next decision.

Provisioned tables (`tableBilling=provisioned`) are raised the same way (`TableScaleAhead`): the
executions, jobs and due tables' write `MinCapacity` is set to what the busiest minute ahead
writes (each execution's units, `TableLoad`, times the minute's count over 60 s, at the target
tracking's utilization), so the capacity is there when the burst falls due rather than two
minutes of throttling later, when target tracking would follow it. Raising is free; lowering is
not: DynamoDB lets a table's capacity fall only 27 times a UTC day (four at any time, then one
an hour with no decrease in it), and target tracking spends the same budget. So the minimum
falls back only as `planned_minimum` allows (a pure function of the clock and of what
DescribeTable says of the table's decreases): at most once an hour, only when the forecast has
fallen well below it, never past the day's budget. Lowering the minimum is not itself a
decrease: target tracking lowers the capacity after its own low-utilization alarm, which also
keeps the burst's tail (completions, heartbeats) on the raised capacity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

from takt.store.due import DueStore, minute_of

# The share of a task's slots the fleet is sized to keep busy: the rest absorbs the minute's
# unevenness (the :00 second holds a fifth of the top of the hour's minute) and late forecasts.
TARGET_BUSY = 0.8
SECONDS_PER_MINUTE = 60
COUNT_THREADS = 8
# The scalable target the step changes; the CDK app grants the watchdog exactly this one.
ECS_NAMESPACE, ECS_DESIRED_COUNT = "ecs", "ecs:service:DesiredCount"
# The provisioned tables' write capacity, the table step's scalable targets (`table/<name>`).
DYNAMODB_NAMESPACE, TABLE_WRITE_CAPACITY = "dynamodb", "dynamodb:table:WriteCapacityUnits"
# What one execution writes to each table (docs/CAPACITY.md, "Where the write path stands";
# tests/unit/capacity holds them to the cost model's measured units): the executions table its
# create, lease and completion, plus a heartbeat each `heartbeat_sec` its call runs; the jobs
# table the claim's advance and the outcomes noted; the due table the fired item's delete, the
# next occurrence's put, the claim's watch list and the minute's sampled count (one put in 16).
WRITE_UNITS_PER_EXECUTION = {"executions": 3.0, "jobs": 1.2, "due": 2.0}
# DynamoDB's rule for a table's decreases: four at any time of a UTC day, then one more in each
# hour with no decrease before it, 27 a day at most (the DynamoDB developer guide, "Service,
# account, and table quotas": decreasing provisioned throughput).
DECREASE_SPACING = timedelta(hours=1)
MAX_DECREASES_A_DAY = 27
# The minimum falls back only once the forecast wants less than this share of it: a steady
# load's small swings never spend a decrease, the hour after a burst does.
LOWER_BELOW = 0.5


@dataclass(frozen=True)
class Forecast:
    """Items due per minute bucket, from this minute on; `complete` is False when a partition
    held more than the pages allowed to count (its count is then a lower bound)."""

    minutes: tuple[tuple[datetime, int], ...]
    complete: bool

    @property
    def peak(self) -> int:
        """The busiest minute's count."""
        return max((count for _, count in self.minutes), default=0)

    @property
    def total(self) -> int:
        return sum(count for _, count in self.minutes)


class DueForecaster:
    """Counts the due index's minute buckets ahead of now."""

    def __init__(self, due: DueStore, minutes: int, max_pages: int) -> None:
        self._due = due
        self._minutes = minutes
        self._pages = max_pages

    def forecast(self, now: datetime) -> Forecast:
        """This minute's bucket and the next `minutes` buckets, every shard of each counted."""
        first = minute_of(now)
        minutes = [first + timedelta(minutes=i) for i in range(self._minutes + 1)]
        # A split minute's every partition (takt.store.due), its split read with the counts.
        splits = self._due.splits(minutes)
        n = self._due.shards
        cells = [(minute, shard) for minute in minutes for shard in range(n * splits[minute])]
        with ThreadPoolExecutor(COUNT_THREADS, thread_name_prefix="count") as pool:
            counts = list(
                pool.map(lambda c: self._due.count_bucket(c[0], c[1], self._pages), cells)
            )
        per_minute = dict.fromkeys(minutes, 0)
        for (minute, _), counted in zip(cells, counts, strict=True):
            per_minute[minute] += counted.count
        return Forecast(minutes=tuple(per_minute.items()), complete=all(c.complete for c in counts))


@dataclass(frozen=True)
class FleetPlan:
    """How the Fargate service's tasks follow a forecast: each execution takes `job_sec`, a task
    runs `slots` at once, the service stays within [`min_tasks`, `max_tasks`]."""

    job_sec: float
    slots: int
    min_tasks: int
    max_tasks: int

    def running_at_once(self, forecast: Forecast) -> float:
        """Executions running at once in the busiest minute, spread over it: its count times the
        share of a minute each runs (more than the minute's count only when runs outlast the
        minute and later minutes are due too)."""
        per_sec = forecast.peak / SECONDS_PER_MINUTE
        return min(per_sec * self.job_sec, max(forecast.total, forecast.peak))

    def tasks_for(self, forecast: Forecast) -> int:
        wanted = math.ceil(self.running_at_once(forecast) / (self.slots * TARGET_BUSY))
        return max(self.min_tasks, min(self.max_tasks, wanted))


@dataclass(frozen=True)
class AheadResult:
    forecast: Forecast
    tasks: int
    # The service's minimum before this step (None: no service configured).
    previous_min: int | None
    # Each provisioned table's write minimum before and after (none on demand).
    tables: list[TableStep] = field(default_factory=list)


class ScaleAhead:
    """The minute step: forecast, then the service's minimum set to the plan's tasks and, with
    `tables`, the provisioned tables' write minimums to the forecast's (`TableScaleAhead`)."""

    def __init__(
        self,
        forecaster: DueForecaster,
        plan: FleetPlan,
        autoscaling: Any | None,
        service: str | None,
        tables: TableScaleAhead | None = None,
    ) -> None:
        self._forecaster = forecaster
        self._plan = plan
        self._autoscaling = autoscaling
        self._service = service
        self._tables = tables

    def step(self, now: datetime) -> AheadResult:
        forecast = self._forecaster.forecast(now)
        # The fleet first: a table step that fails (its error ends the step) leaves it sized.
        result = self._fleet(forecast)
        tables = self._tables.step(forecast, now) if self._tables is not None else []
        return AheadResult(result.forecast, result.tasks, result.previous_min, tables)

    def _fleet(self, forecast: Forecast) -> AheadResult:
        tasks = self._plan.tasks_for(forecast)
        if self._autoscaling is None or self._service is None:
            return AheadResult(forecast, tasks, previous_min=None)
        previous = self._current_min(self._autoscaling, self._service)
        # No scalable target: the deployment keeps the service at a fixed size (min = max).
        if previous is not None and previous != tasks:
            self._autoscaling.register_scalable_target(
                ServiceNamespace=ECS_NAMESPACE,
                ResourceId=self._service,
                ScalableDimension=ECS_DESIRED_COUNT,
                MinCapacity=tasks,
            )
        return AheadResult(forecast, tasks, previous_min=previous)

    @staticmethod
    def _current_min(autoscaling: Any, service: str) -> int | None:
        resp = autoscaling.describe_scalable_targets(
            ServiceNamespace=ECS_NAMESPACE,
            ResourceIds=[service],
            ScalableDimension=ECS_DESIRED_COUNT,
        )
        targets = resp.get("ScalableTargets", [])
        return int(targets[0]["MinCapacity"]) if targets else None


@dataclass(frozen=True)
class Decreases:
    """What DescribeTable says of a table's capacity decreases (`ProvisionedThroughput`):
    how many today (UTC; DynamoDB resets the count at midnight) and when the last was."""

    today: int
    last: datetime | None

    def allow_one(self, now: datetime) -> bool:
        """Whether a decrease at `now` keeps within DynamoDB's rule without spending the four
        that any hour allows: the last decrease an hour ago or more, and the day's 27 not
        reached. Target tracking's own decreases count here too, since DynamoDB counts them."""
        if self.last is not None and now - self.last < DECREASE_SPACING:
            return False
        # botocore gives DescribeTable's times in the machine's zone; DynamoDB's day is UTC's.
        same_day = self.last is not None and _utc_day(self.last) == _utc_day(now)
        today = self.today if same_day else 0
        return today < MAX_DECREASES_A_DAY


def _utc_day(at: datetime) -> date:
    return at.astimezone(UTC).date()


def planned_minimum(
    wanted: int, held: int, decreases: Callable[[], Decreases], now: datetime
) -> int:
    """The write minimum a table should hold: `wanted` (the forecast's, already at least the
    profile's floor) when it is more than `held` (raising is free and never waits); `held`
    while the forecast stays above half of it; `wanted` again only when DynamoDB's budget allows
    a decrease now (`Decreases.allow_one`, asked only then: it costs a DescribeTable). A
    forecast that flaps between busy and quiet minutes therefore spends at most one decrease an
    hour, and a burst every hour gets one each hour."""
    if wanted > held:
        return wanted
    if wanted >= held * LOWER_BELOW or not decreases().allow_one(now):
        return held
    return wanted


@dataclass(frozen=True)
class ScaledTable:
    """A provisioned table the step raises: its kind (a key of `WRITE_UNITS_PER_EXECUTION`),
    its name and the write minimum its profile gives it (the floor the step returns to)."""

    kind: str
    name: str
    floor: int

    @property
    def resource_id(self) -> str:
        return f"table/{self.name}"


@dataclass(frozen=True)
class TableLoad:
    """How a minute's executions load a table's writes: each writes `WRITE_UNITS_PER_EXECUTION`
    units (the executions table one more a heartbeat, every `heartbeat_sec` of a `job_sec`
    call), and target tracking holds the capacity at `target_utilization` percent."""

    job_sec: float
    heartbeat_sec: float
    target_utilization: int

    def units_per_execution(self, kind: str) -> float:
        units = WRITE_UNITS_PER_EXECUTION[kind]
        if kind == "executions":
            units += math.floor(self.job_sec / self.heartbeat_sec)
        return units

    def capacity_for(self, table: ScaledTable, forecast: Forecast) -> int:
        """The busiest minute's write rate, at the target utilization; at least the floor."""
        per_sec = forecast.peak / SECONDS_PER_MINUTE * self.units_per_execution(table.kind)
        return max(table.floor, math.ceil(per_sec * 100 / self.target_utilization))


@dataclass(frozen=True)
class TableStep:
    """One table's minute: the minimum it held, the one it holds now."""

    table: str
    previous_min: int
    minimum: int


class TableScaleAhead:
    """The tables' part of the minute step: each table's write minimum set by
    `planned_minimum` from the forecast."""

    def __init__(
        self, tables: tuple[ScaledTable, ...], load: TableLoad, autoscaling: Any, dynamodb: Any
    ) -> None:
        self._tables = tables
        self._load = load
        self._autoscaling = autoscaling
        self._dynamodb = dynamodb

    def step(self, forecast: Forecast, now: datetime) -> list[TableStep]:
        resp = self._autoscaling.describe_scalable_targets(
            ServiceNamespace=DYNAMODB_NAMESPACE,
            ResourceIds=[table.resource_id for table in self._tables],
            ScalableDimension=TABLE_WRITE_CAPACITY,
        )
        targets = {t["ResourceId"]: t for t in resp.get("ScalableTargets", [])}
        steps = []
        for table in self._tables:
            target = targets.get(table.resource_id)
            if target is None:
                continue
            held = int(target["MinCapacity"])
            wanted = min(int(target["MaxCapacity"]), self._load.capacity_for(table, forecast))
            minimum = planned_minimum(wanted, held, partial(self._decreases, table), now)
            if minimum != held:
                self._autoscaling.register_scalable_target(
                    ServiceNamespace=DYNAMODB_NAMESPACE,
                    ResourceId=table.resource_id,
                    ScalableDimension=TABLE_WRITE_CAPACITY,
                    MinCapacity=minimum,
                )
            steps.append(TableStep(table.name, held, minimum))
        return steps

    def _decreases(self, table: ScaledTable) -> Decreases:
        throughput = self._dynamodb.describe_table(TableName=table.name)["Table"].get(
            "ProvisionedThroughput", {}
        )
        return Decreases(
            today=int(throughput.get("NumberOfDecreasesToday", 0)),
            last=throughput.get("LastDecreaseDateTime"),
        )
