"""The SQS requests an execution costs on Fargate workers, from what `takt worker` sends.

The worker function's SQS line is metered on the Lambda path (its event source mapping receives
and deletes). A Fargate worker makes its own requests (takt.worker.process), so its line is
computed from them:

- **Sends**: the claim's. A claim sends a due partition's second in `SendMessageBatch`es of ten,
  so a partition holding k items a second costs ceil(k / 10) requests for k messages, which land
  in the lane in clumps of k / ceil(k / 10).
- **Receives**: a worker asks for as many messages as it has free slots, ten at most, and gets at
  most a clump; each receiving round first tries the lanes its weighted pick puts before the
  executions' lane, which are empty (`empty_polls_per_round`).
- **Deletes**: ten to a request (takt.worker.deletes). A receive's messages are leased together,
  and the batch also takes what the task leases within the flush interval.
- **Idle polling**: a task whose lanes hold nothing polls every lane once and long-polls one for
  `IDLE_WAIT_SEC`: one such round a task-second, priced per task-hour (a fleet sized for 80 %
  busy slots drains its lane faster than the claim fills it, so its tasks mostly wait). It is an
  estimate: a round ends earlier when a message lands on the long-polled lane.

`bench/worker_sqs.py` measures the same requests on a real run (docs/CAPACITY.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from takt.dispatch.ahead import TARGET_BUSY
from takt.worker.deletes import FLUSH_SEC, MAX_BATCH
from takt.worker.process import DEFAULT_WEIGHTS, IDLE_WAIT_SEC, MAX_RECEIVE, LanePicker

# Every profile's `fargateLanes` (cli/takt_cli/profiles.json): the `high` lane stays on Lambda.
FARGATE_LANES = ("default", "low")
# SQS's most entries in one SendMessageBatch, which the claim fills (takt.dispatch.lanes).
SEND_BATCH = 10
SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class FargateSqs:
    """A fleet of `tasks` running `per_sec` executions a second, all from `lane`, claimed from
    `partitions` due partitions a second."""

    per_sec: float
    tasks: int
    slots: int
    partitions: int
    lane: str = "default"
    lanes: tuple[str, ...] = FARGATE_LANES
    busy_share: float = TARGET_BUSY
    flush_sec: float = FLUSH_SEC

    @property
    def clump(self) -> float:
        """The messages one of the claim's SendMessageBatch requests lands at once."""
        per_partition = max(1.0, self.per_sec / self.partitions)
        return per_partition / math.ceil(per_partition / SEND_BATCH)

    @property
    def messages_per_receive(self) -> float:
        """What a receive takes: its free slots (ten at most), of the clump it finds."""
        free = max(1.0, self.slots * (1 - self.busy_share))
        return min(float(MAX_RECEIVE), free, self.clump)

    @property
    def empty_polls_per_round(self) -> float:
        """The empty lanes a receiving round tries before `lane`, over a cycle of the picks."""
        picker = LanePicker(self.lanes, DEFAULT_WEIGHTS)
        cycle = sum(max(1, DEFAULT_WEIGHTS.get(lane, 1)) for lane in self.lanes)
        before = [picker.order().index(self.lane) for _ in range(cycle)]
        return sum(before) / cycle

    def per_execution(self) -> dict[str, float]:
        """Each kind of request an execution makes, the idle polling apart (`per_task_hour`).
        The receives assume a round finds a clump waiting: the rounds that find nothing are
        the idle polling's."""
        received = self.messages_per_receive
        per_task_sec = self.per_sec / max(1, self.tasks)
        batch = min(float(MAX_BATCH), received + per_task_sec * self.flush_sec)
        return {
            "sends": 1 / self.clump,
            "receives": (1 + self.empty_polls_per_round) / received,
            "deletes": 1 / batch,
        }

    def idle_polls_per_task_hour(self) -> float:
        """An idle round a task-second: every lane once, then the long poll."""
        return (len(self.lanes) + 1) / IDLE_WAIT_SEC * SECONDS_PER_HOUR
