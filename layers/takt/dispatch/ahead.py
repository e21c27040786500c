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
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from takt.store.due import DueStore, minute_of

# The share of a task's slots the fleet is sized to keep busy: the rest absorbs the minute's
# unevenness (the :00 second holds a fifth of the top of the hour's minute) and late forecasts.
TARGET_BUSY = 0.8
SECONDS_PER_MINUTE = 60
COUNT_THREADS = 8
# The scalable target the step changes; the CDK app grants the watchdog exactly this one.
ECS_NAMESPACE, ECS_DESIRED_COUNT = "ecs", "ecs:service:DesiredCount"


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


class ScaleAhead:
    """The minute step: forecast, then the service's minimum set to the plan's tasks."""

    def __init__(
        self,
        forecaster: DueForecaster,
        plan: FleetPlan,
        autoscaling: Any | None,
        service: str | None,
    ) -> None:
        self._forecaster = forecaster
        self._plan = plan
        self._autoscaling = autoscaling
        self._service = service

    def step(self, now: datetime) -> AheadResult:
        forecast = self._forecaster.forecast(now)
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
