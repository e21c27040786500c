"""`takt worker` publishes its busy slots at every metric flush, not only as runs start.

A run holds no lane message once it is leased (issue 26), so SQS's in-flight count no longer
shows a long run; the Fargate service's idle rule reads `WorkerSlotsBusy` instead
(infra/worker_service.py), and a task whose runs outlast a flush interval must keep reporting
them or the rule would remove it under them.
"""

from __future__ import annotations

import threading
from typing import Any, cast

import pytest

from takt.config import Settings
from takt.observability import MetricUnit
from takt.worker.metrics import MetricPublisher
from takt.worker.process import WorkerProcess
from takt_cli.commands.main import main


class FakeCloudWatch:
    """PutMetricData, recorded: each request's metric names and values."""

    def __init__(self) -> None:
        self.sent: list[list[tuple[str, list[float]]]] = []

    def put_metric_data(self, **params: Any) -> None:
        self.sent.append([(d["MetricName"], list(d["Values"])) for d in params["MetricData"]])


def test_the_publisher_takes_a_sample_before_every_flush_and_the_last_one() -> None:
    cloudwatch = FakeCloudWatch()
    publisher = MetricPublisher(cast(Any, cloudwatch), "takt")
    stop = threading.Event()
    levels = iter([50.0, 100.0])

    def sample() -> None:
        publisher.add("WorkerSlotsBusy", MetricUnit.Percent, next(levels))
        stop.set()  # the second flush, the last one, comes right after this one

    publisher.run(stop, interval_sec=0.0, sample=sample)

    assert cloudwatch.sent == [[("WorkerSlotsBusy", [50.0])], [("WorkerSlotsBusy", [100.0])]], (
        "issue 26: a level such as the busy slots goes out at every flush, with or without runs "
        "starting"
    )


def test_takt_worker_samples_its_busy_slots_at_every_flush(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    flushed: list[list[tuple[str, float]]] = []

    class Recorded(MetricPublisher):
        def flush(self) -> int:
            with self._lock:
                collected, self._values = self._values, {}
            flushed.append([(name, v) for (name, _), counts in collected.items() for v in counts])
            return len(collected)

    settings = Settings(lane_urls={"default": "http://127.0.0.1:9/queue/default"})
    monkeypatch.setattr("takt_cli.commands.worker.get_settings", lambda: settings)
    monkeypatch.setattr("takt_cli.commands.worker.MetricPublisher", Recorded)
    # No lane to poll: the loop ends at once, and the publisher's last flush follows.
    monkeypatch.setattr(WorkerProcess, "run", lambda self: None)

    assert main(["worker", "--lanes", "default"]) == 0

    assert flushed == [[("WorkerSlotsBusy", 0.0)]], (
        "issue 26: takt worker hands its busy-slot sample to the publisher's flushes"
    )
