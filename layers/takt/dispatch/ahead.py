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
executions, jobs and due tables' write and read `MinCapacity` is set to what the busiest minute
ahead writes and reads (each execution's units, `TableLoad`, times the minute's count over 60 s,
at the target tracking's utilization), so the capacity is there when the burst falls due rather
than two minutes of throttling later, when target tracking would follow it. Raising is free;
lowering is not: DynamoDB lets a table's capacity fall only 27 times a UTC day (four at any
time, then one an hour with no decrease in it), one UpdateTable lowering its reads, its writes
or both counting once, and target tracking spends the same budget. So the minimums fall back
only as `planned_minimum` allows (a pure function of the clock and of what DescribeTable says of
the table's increases and decreases): at most once an hour, only when the forecast has fallen
well below them, never past the day's budget, and never sooner than `hold` after the table's
last increase (the minutes ahead, the burst's minute, and its tail: runs started in its last
seconds and their completions). When they fall, the step lowers the table's capacity to them
in the same UpdateTable (one decrease for both ways), rather than leaving it to target
tracking, whose low alarm wants 15 minutes below target: the burst's capacity is held minutes,
not a quarter of the hour.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from takt.observability import logger
from takt.store.due import DueStore, minute_of

# The share of a task's slots the fleet is sized to keep busy: the rest absorbs the minute's
# unevenness (the :00 second holds a fifth of the top of the hour's minute) and late forecasts.
TARGET_BUSY = 0.8
SECONDS_PER_MINUTE = 60
COUNT_THREADS = 8
# The scalable target the step changes; the CDK app grants the watchdog exactly this one.
ECS_NAMESPACE, ECS_DESIRED_COUNT = "ecs", "ecs:service:DesiredCount"
# The provisioned tables' write and read capacity, the table step's scalable targets
# (`table/<name>`).
DYNAMODB_NAMESPACE, TABLE_WRITE_CAPACITY = "dynamodb", "dynamodb:table:WriteCapacityUnits"
TABLE_READ_CAPACITY = "dynamodb:table:ReadCapacityUnits"
# What one execution writes to each table (docs/CAPACITY.md, "Where the write path stands";
# tests/unit/capacity holds them to the cost model's measured units): the executions table its
# create, lease and completion, plus a heartbeat each `heartbeat_sec` its call runs; the jobs
# table the claim's advance and the outcomes noted; the due table the fired item's delete, the
# next occurrence's put, the claim's watch list and the minute's sampled count (one put in 16).
WRITE_UNITS_PER_EXECUTION = {"executions": 3.0, "jobs": 1.2, "due": 2.0}
# What one execution reads from each (the same tests hold them to the cost model's measured
# reads): the executions table the watchdog's read of its claim's watch list; the jobs table
# the claim's consistent read of the job, the worker's lease-time check and its read after a
# success; the due table the claim's query and the minutes' counts.
READ_UNITS_PER_EXECUTION = {"executions": 0.5, "jobs": 3.0, "due": 0.1}
# DynamoDB's rule for a table's decreases: four at any time of a UTC day, then one more in each
# hour with no decrease before it, 27 a day at most (the DynamoDB developer guide, "Service,
# account, and table quotas": decreasing provisioned throughput).
DECREASE_SPACING = timedelta(hours=1)
MAX_DECREASES_A_DAY = 27
ANY_TIME_DECREASES = 4
# Of those four, what the step leaves to target tracking's own decreases.
SPARE_DECREASES = 2
# After the minutes ahead, the burst's own minute and one more for its tail (runs claimed in its
# last seconds and their completions) hold the raised capacity: a table is lowered no sooner
# than `hold_after_increase` after its last increase.
BURST_MINUTES = 2
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
    """What DescribeTable says of a table's capacity changes (`ProvisionedThroughput`): how
    many decreases today (UTC; DynamoDB resets the count at midnight), when the last was, when
    the last increase was, and the capacity it holds now (each way)."""

    today: int
    last: datetime | None
    last_increase: datetime | None = None
    capacity: Units | None = None

    def allow_one(self, now: datetime, hold: timedelta = timedelta(0)) -> bool:
        """Whether a decrease at `now` keeps within DynamoDB's rule: the last decrease an hour
        ago or more and the day's 27 not reached, or, within the hour, one of the four any
        hour allows while `SPARE_DECREASES` of them are left for target tracking's own (which
        DynamoDB counts too): a lowering delayed one hour (its table busy updating) comes back
        to the burst's time the next hour rather than dragging every later one behind it. And
        not within `hold` of the last increase: a burst raised ahead keeps its capacity through
        its minute and its tail."""
        if self.last_increase is not None and now - self.last_increase < hold:
            return False
        # botocore gives DescribeTable's times in the machine's zone; DynamoDB's day is UTC's.
        same_day = self.last is not None and _utc_day(self.last) == _utc_day(now)
        today = self.today if same_day else 0
        if self.last is not None and now - self.last < DECREASE_SPACING:
            return today < ANY_TIME_DECREASES - SPARE_DECREASES
        return today < MAX_DECREASES_A_DAY


def _utc_day(at: datetime) -> date:
    return at.astimezone(UTC).date()


def hold_after_increase(minutes_ahead: int) -> timedelta:
    """How long a table keeps a capacity raised `minutes_ahead` of a burst: through the
    burst's minute and its tail (`BURST_MINUTES`)."""
    return timedelta(minutes=minutes_ahead + BURST_MINUTES)


@dataclass(frozen=True)
class Units:
    """A table's capacity units, each way."""

    write: int
    read: int

    def below(self, other: Units) -> bool:
        """Whether either way is less than `other`'s."""
        return self.write < other.write or self.read < other.read


def planned_minimum(
    wanted: Units,
    held: Units,
    decreases: Callable[[], Decreases],
    now: datetime,
    hold: timedelta = timedelta(0),
) -> Units:
    """The minimums a table should hold: each way raised to `wanted` (the forecast's, already
    at least the profile's floor) when it wants more than `held` (raising is free and never
    waits); `held` while the forecast stays above half of it both ways; `wanted` again only
    when DynamoDB's budget allows a decrease now, `hold` after the last increase
    (`Decreases.allow_one`, asked only then: it costs a DescribeTable). A forecast that flaps
    between busy and quiet minutes therefore spends at most one decrease an hour, and a burst
    every hour gets one each hour."""
    if wanted.write > held.write or wanted.read > held.read:
        return Units(max(wanted.write, held.write), max(wanted.read, held.read))
    falls = wanted.write < held.write * LOWER_BELOW or wanted.read < held.read * LOWER_BELOW
    if not falls or not decreases().allow_one(now, hold):
        return held
    return wanted


@dataclass(frozen=True)
class ScaledTable:
    """A provisioned table the step raises: its kind (a key of `WRITE_UNITS_PER_EXECUTION`),
    its name and the minimums its profile gives it (the floors the step returns to)."""

    kind: str
    name: str
    floor: int
    read_floor: int = 1

    @property
    def resource_id(self) -> str:
        return f"table/{self.name}"


@dataclass(frozen=True)
class TableLoad:
    """How a minute's executions load a table: each writes `WRITE_UNITS_PER_EXECUTION` units
    (the executions table one more a heartbeat, every `heartbeat_sec` of a `job_sec` call) and
    reads `READ_UNITS_PER_EXECUTION`, and target tracking holds the capacity at
    `target_utilization` percent."""

    job_sec: float
    heartbeat_sec: float
    target_utilization: int

    def units_per_execution(self, kind: str) -> float:
        units = WRITE_UNITS_PER_EXECUTION[kind]
        if kind == "executions":
            units += math.floor(self.job_sec / self.heartbeat_sec)
        return units

    def capacity_for(self, table: ScaledTable, forecast: Forecast) -> Units:
        """The busiest minute's write and read rates, at the target utilization; at least the
        floors."""
        per_sec = forecast.peak / SECONDS_PER_MINUTE
        write = per_sec * self.units_per_execution(table.kind)
        read = per_sec * READ_UNITS_PER_EXECUTION[table.kind]
        return Units(
            max(table.floor, math.ceil(write * 100 / self.target_utilization)),
            max(table.read_floor, math.ceil(read * 100 / self.target_utilization)),
        )


@dataclass(frozen=True)
class TableStep:
    """One table's minute: the minimums it held, the ones it holds now, and whether its
    capacity was lowered to them."""

    table: str
    previous: Units
    minimum: Units
    lowered: bool = False


class TableScaleAhead:
    """The tables' part of the minute step: each table's write and read minimums set by
    `planned_minimum` from the forecast, and its capacity lowered with them."""

    def __init__(
        self,
        tables: tuple[ScaledTable, ...],
        load: TableLoad,
        autoscaling: Any,
        dynamodb: Any,
        hold: timedelta = timedelta(0),
    ) -> None:
        self._tables = tables
        self._load = load
        self._autoscaling = autoscaling
        self._dynamodb = dynamodb
        self._hold = hold

    def step(self, forecast: Forecast, now: datetime) -> list[TableStep]:
        resp = self._autoscaling.describe_scalable_targets(
            ServiceNamespace=DYNAMODB_NAMESPACE,
            ResourceIds=[table.resource_id for table in self._tables],
        )
        targets = {
            (t["ResourceId"], t["ScalableDimension"]): t for t in resp.get("ScalableTargets", [])
        }
        steps = []
        for table in self._tables:
            writes = targets.get((table.resource_id, TABLE_WRITE_CAPACITY))
            reads = targets.get((table.resource_id, TABLE_READ_CAPACITY))
            if writes is None or reads is None:
                continue
            held = Units(int(writes["MinCapacity"]), int(reads["MinCapacity"]))
            planned = self._load.capacity_for(table, forecast)
            wanted = Units(
                min(int(writes["MaxCapacity"]), planned.write),
                min(int(reads["MaxCapacity"]), planned.read),
            )
            seen: list[Decreases] = []
            minimum = planned_minimum(
                wanted, held, partial(self._decreases, table, seen), now, self._hold
            )
            for dimension, before, after in (
                (TABLE_WRITE_CAPACITY, held.write, minimum.write),
                (TABLE_READ_CAPACITY, held.read, minimum.read),
            ):
                if after != before:
                    self._autoscaling.register_scalable_target(
                        ServiceNamespace=DYNAMODB_NAMESPACE,
                        ResourceId=table.resource_id,
                        ScalableDimension=dimension,
                        MinCapacity=after,
                    )
            lowered = minimum.below(held) and self._lower(table, minimum, seen[-1].capacity)
            steps.append(TableStep(table.name, held, minimum, lowered))
        return steps

    def _lower(self, table: ScaledTable, minimum: Units, capacity: Units | None) -> bool:
        """Bring the table's capacity down to its lowered minimums in one UpdateTable, one
        decrease for both ways. A refusal (the table busy updating, the budget spent after all)
        leaves it to target tracking, which lowers it after its own alarm."""
        if capacity is None:
            return False
        lowered = Units(min(capacity.write, minimum.write), min(capacity.read, minimum.read))
        if not lowered.below(capacity):
            return False
        try:
            self._dynamodb.update_table(
                TableName=table.name,
                ProvisionedThroughput={
                    "ReadCapacityUnits": lowered.read,
                    "WriteCapacityUnits": lowered.write,
                },
            )
        except (ClientError, BotoCoreError) as exc:
            logger.warning(
                "table capacity not lowered: target tracking will", table=table.name, error=str(exc)
            )
            return False
        return True

    def _decreases(self, table: ScaledTable, seen: list[Decreases]) -> Decreases:
        throughput = self._dynamodb.describe_table(TableName=table.name)["Table"].get(
            "ProvisionedThroughput", {}
        )
        capacity = (
            Units(int(throughput["WriteCapacityUnits"]), int(throughput["ReadCapacityUnits"]))
            if "WriteCapacityUnits" in throughput and "ReadCapacityUnits" in throughput
            else None
        )
        decreases = Decreases(
            today=int(throughput.get("NumberOfDecreasesToday", 0)),
            last=throughput.get("LastDecreaseDateTime"),
            last_increase=throughput.get("LastIncreaseDateTime"),
            capacity=capacity,
        )
        seen.append(decreases)
        return decreases
