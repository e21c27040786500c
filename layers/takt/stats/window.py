"""The last hour of takt's metrics, kept in memory, for `takt local`.

In the cloud CloudWatch aggregates the handlers' EMF lines; locally nothing does, so the runtime
feeds every `add_metric` value into a `MetricsWindow` and the API reads it through the same
`MetricsReader` port as CloudWatch. Each minute keeps a count, a sum, the extremes and a
histogram with buckets 2 % wide, so memory stays bounded however many values arrive, and a
percentile is within 2 % of the exact one (CloudWatch's own percentiles are approximations too).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from takt.clock import Clock
from takt.observability import MetricUnit
from takt.stats.base import MINUTE_SEC, MetricQuery, Statistic

GROWTH = 1.02
"""Each histogram bucket is 2 % wider than the one below it."""

_LOG_GROWTH = math.log(GROWTH)
_ZERO = -(10**9)
"""The bucket of zero and negative values, which have no logarithm."""


@dataclass
class _Summary:
    """Everything kept about one metric in one minute."""

    count: int = 0
    total: float = 0.0
    minimum: float = math.inf
    maximum: float = -math.inf
    buckets: Counter[int] = field(default_factory=Counter)

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.minimum = min(self.minimum, value)
        self.maximum = max(self.maximum, value)
        self.buckets[_ZERO if value <= 0 else math.floor(math.log(value) / _LOG_GROWTH)] += 1

    def statistic(self, stat: Statistic) -> float:
        if stat == "Sum":
            return self.total
        if stat == "SampleCount":
            return float(self.count)
        if stat == "Maximum":
            return self.maximum
        return self._percentile(float(stat[1:]))

    def _percentile(self, percent: float) -> float:
        rank = max(1, math.ceil(percent / 100 * self.count))
        seen = 0
        for bucket in sorted(self.buckets):
            seen += self.buckets[bucket]
            if seen >= rank:
                middle = 0.0 if bucket == _ZERO else GROWTH ** (bucket + 0.5)
                return min(self.maximum, max(self.minimum, middle))
        return self.maximum


class MetricsWindow:
    """Per-minute summaries of every metric recorded in the last `keep_minutes` minutes."""

    def __init__(self, clock: Clock, keep_minutes: int = 61) -> None:
        self._clock = clock
        self._started = clock.now()
        self._keep = keep_minutes
        self._lock = threading.Lock()
        self._minutes: dict[int, dict[str, _Summary]] = {}

    def record(self, name: str, unit: MetricUnit, value: float) -> None:
        """Add one value; the signature of an `observability.listen` listener."""
        minute = int(self._clock.now().timestamp()) // MINUTE_SEC
        with self._lock:
            if minute not in self._minutes:
                oldest = minute - self._keep + 1
                for old in [m for m in self._minutes if m < oldest]:
                    del self._minutes[old]
                self._minutes[minute] = {}
            self._minutes[minute].setdefault(name, _Summary()).add(value)

    def since(self) -> datetime | None:
        """When the window began: nothing from before it (a previous run) is in it."""
        return self._started

    def minutely(
        self, queries: list[MetricQuery], start: datetime, minutes: int
    ) -> dict[str, list[float | None]]:
        first = int(start.timestamp()) // MINUTE_SEC
        answer: dict[str, list[float | None]] = {q.key: [] for q in queries}
        with self._lock:
            for minute in range(first, first + minutes):
                summaries = self._minutes.get(minute, {})
                for query in queries:
                    summary = summaries.get(query.metric)
                    answer[query.key].append(
                        None if summary is None else summary.statistic(query.stat)
                    )
        return answer
