"""LambdaFanout invokes one claimer per busy partition, all of them, at once."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from typing import Any

from takt.dispatch.ticker import ClaimTask, LambdaFanout

NOW = datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC)


class SlowLambda:
    """Records invocations; each takes 50 ms, as an asynchronous Invoke takes some."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.05)
        with self._lock:
            self.in_flight -= 1
            self.events.append(json.loads(kwargs["Payload"]))
        return {"StatusCode": 202}


def test_every_busy_partition_is_invoked_once_and_concurrently() -> None:
    client = SlowLambda()
    tasks = [ClaimTask(NOW, shard, NOW) for shard in range(16)]
    fanout = LambdaFanout(client, "claimer", lambda task: task.shard % 2 == 0, threads=8)  # type: ignore[arg-type]
    fanout.run(tasks)
    assert sorted(event["shard"] for event in client.events) == list(range(0, 16, 2))
    assert client.most_in_flight > 1
