"""What a metrics reader is asked for, and what it answers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

Statistic = Literal["Sum", "SampleCount", "Maximum", "p50", "p99"]
"""CloudWatch statistics, spelled as GetMetricData takes them, that the in-memory window keeps."""

MINUTE_SEC = 60


@dataclass(frozen=True)
class MetricQuery:
    """One series: a statistic of one metric per minute. `key` names it in the answer."""

    key: str
    metric: str
    stat: Statistic


class MetricsReader(Protocol):
    """Per-minute statistics of takt's metrics.

    `start` is a whole minute; the answer maps each query's key to one value per minute from
    `start` for `minutes` minutes, None where the metric had no value in that minute (so a count
    of nothing is None, not 0: callers decide what an empty minute means).
    """

    def minutely(
        self, queries: list[MetricQuery], start: datetime, minutes: int
    ) -> dict[str, list[float | None]]: ...

    def since(self) -> datetime | None:
        """The first instant the reader has values for; None when it holds every minute asked
        for (CloudWatch). An in-memory window began with its process, so after a restart the
        minutes before it read as empty though things happened in them: the overview says so
        instead of showing them as zeros."""
        ...
