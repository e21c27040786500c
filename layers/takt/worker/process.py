"""`takt worker`: a long-running process that polls the lanes and runs executions (the Fargate
shape, for jobs longer than Lambda's 15 minutes), with the same runner as the worker Lambda.

Lanes. Each receive round starts with the lane a smooth weighted round-robin picks (weights
`high` 4, `default` 2, `low` 1) and falls through the others in priority order when it is empty.
With every lane busy, rounds start 4:2:1, so `low` still gets a seventh of them and never starves;
with `high` empty, its share goes to the lanes below. When a round finds every lane empty, the
worker long-polls the round's first lane for `IDLE_WAIT_SEC` before the next round, so an idle
worker costs a few requests a second and a new message waits at most about that long.

Messages. A worker receives only as many messages as it has free slots (`--concurrency`): a
prefetched message would sit invisible while another worker could run it. A message is held only
until its execution's lease is taken: once the runner has written the lease (the execution is
`running` under this worker's lease token, durable in DynamoDB), the message's delete is queued
before the call starts and sent within `delete_flush_sec`. From then on the execution's recovery
rests on the lease and the watchdog, as it already did: a copy of the message that came back would
meet the lease's condition and be dropped, and if the worker dies, the watchdog finds the running
execution at its `check_at`, takes the expired lease back and sends the next attempt
(docs/RELIABILITY.md). So a run holds none of a lane's in-flight messages while it calls (SQS hands
out at most 120,000 a queue: at the top of the hour, ~167,000 ten-second calls run at once), and a
long run pays no visibility extensions. A message claimed ahead of its time is released before its
hold the same way (its pending execution's `check_at` is its way back: the runner's `process`), so
the second or two it waits holds no in-flight message either. Otherwise nothing before the lease is
long (the gate, a read and the lease write), so a message is received with a visibility of twice
the lease and never extended; if the worker dies before the lease, it comes back then. A message
that took no lease (a duplicate or stale copy, a skipped or missing execution, one sent back for
another worker) is deleted after the runner returns: every such outcome is recorded on the
execution or sent on as a fresh message. Deletes go ten to a request (takt.worker.deletes): a
receipt waits at most `delete_flush_sec` for others of its lane, and whatever waits is sent when
the worker stops. An infrastructure error before the lease (DynamoDB unreachable) leaves the
message to reappear after `INFRA_RETRY_SEC`; after the lease, the message is already gone and the
lease's expiry brings the execution back.

Shutdown (SIGTERM, as ECS sends it). The worker stops receiving; running executions may finish
until the grace period ends, and the runner then gives each one back (pending again at the same
attempt, with a fresh message) for another worker. A message received after the stop is made
visible again at once.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from takt.config import LANES, Settings
from takt.models.lanes import LaneMessage
from takt.observability import MetricUnit, logger
from takt.worker.deadline import HostDeadline
from takt.worker.deletes import FLUSH_SEC, MessageDeletes
from takt.worker.metrics import Emit, log_outcome, record_outcome
from takt.worker.runner import ExecutionRunner

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

DEFAULT_WEIGHTS: Mapping[str, int] = {"high": 4, "default": 2, "low": 1}
IDLE_WAIT_SEC = 1
INFRA_RETRY_SEC = 5
MAX_RECEIVE = 10


class LanePicker:
    """Which lane each receive round tries first: smooth weighted round-robin.

    Every round each lane's credit grows by its weight; the lane with the most credit is picked
    and pays back the total, so over a cycle each lane is picked in proportion to its weight,
    evenly spread rather than in bursts. `lanes` is in priority order.
    """

    def __init__(self, lanes: tuple[str, ...], weights: Mapping[str, int]) -> None:
        self._lanes = lanes
        self._weights = {lane: max(1, weights.get(lane, 1)) for lane in lanes}
        self._credit = dict.fromkeys(lanes, 0)
        self._total = sum(self._weights.values())

    def order(self) -> list[str]:
        """The lanes in the order this round tries them: the picked one, then by priority."""
        for lane in self._lanes:
            self._credit[lane] += self._weights[lane]
        picked = max(self._lanes, key=lambda lane: self._credit[lane])
        self._credit[picked] -= self._total
        return [picked, *(lane for lane in self._lanes if lane != picked)]


@dataclass(frozen=True)
class WorkerOptions:
    lanes: tuple[str, ...] = LANES
    concurrency: int = 4
    grace_sec: float = 25.0
    weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    delete_flush_sec: float = FLUSH_SEC


class WorkerProcess:
    def __init__(
        self,
        settings: Settings,
        sqs: SQSClient,
        runner: ExecutionRunner,
        options: WorkerOptions,
        emit: Emit | None = None,
    ) -> None:
        """`emit` receives each processed message's metrics (`record_outcome`); `takt worker`
        passes a `MetricPublisher`'s, so the Fargate service reports what the worker function
        does."""
        self._settings = settings
        self._emit = emit
        self._sqs = sqs
        self._runner = runner
        self._options = options
        self._urls = {lane: settings.lane_url(lane) for lane in options.lanes}
        self.deletes = MessageDeletes(sqs, self._urls, flush_sec=options.delete_flush_sec)
        self._picker = LanePicker(options.lanes, options.weights)
        self._visibility = max(1, math.ceil(2 * settings.lease_sec))
        self._host = HostDeadline()
        self._stopping = threading.Event()
        self._slots = threading.Condition()
        self._busy = 0
        self.processed = 0

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def sample_busy(self) -> None:
        """Emit the share of slots busy now, as `WorkerSlotsBusy`.

        `takt worker` calls it before each metric flush. A run holds no lane message once it is
        leased, so SQS's in-flight count no longer shows a long run; this sample, at least once
        a flush interval while the run lasts, is what keeps the Fargate service's idle rule from
        removing the task under it (infra/worker_service.py).
        """
        if self._emit is None:
            return
        with self._slots:
            busy = 100.0 * self._busy / self._options.concurrency
        self._emit("WorkerSlotsBusy", MetricUnit.Percent, busy)

    def stop(self) -> None:
        """Stop taking work; running executions have `grace_sec` left, then are given back."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._host.set(time.monotonic() + self._options.grace_sec)
        with self._slots:
            self._slots.notify_all()

    def run(self) -> None:
        """Poll and run until `stop`, then wait for the runs in progress to end and send the
        deletes still waiting."""
        flusher = threading.Thread(target=self.deletes.run, name="deletes", daemon=True)
        flusher.start()
        try:
            self._poll()
        finally:
            self.deletes.close()
            flusher.join()

    def _poll(self) -> None:
        with ThreadPoolExecutor(self._options.concurrency, thread_name_prefix="slot") as pool:
            while not self._stopping.is_set():
                free = self._free_slots()
                if free == 0:
                    continue
                try:
                    lane, messages = self._receive(free)
                except (ClientError, BotoCoreError):
                    logger.exception("receiving from the lanes failed")
                    self._stopping.wait(IDLE_WAIT_SEC)
                    continue
                for message in messages:
                    if self._stopping.is_set():
                        self._change_visibility(lane, message["ReceiptHandle"], 0)
                        continue
                    with self._slots:
                        self._busy += 1
                        busy = 100.0 * self._busy / self._options.concurrency
                    if self._emit is not None:
                        # The share of slots busy as each run starts: what the Fargate service
                        # tracks to add tasks (infra/worker_service.py).
                        self._emit("WorkerSlotsBusy", MetricUnit.Percent, busy)
                    pool.submit(self._run, lane, message)

    def _free_slots(self) -> int:
        with self._slots:
            while self._busy >= self._options.concurrency and not self._stopping.is_set():
                self._slots.wait()
            return 0 if self._stopping.is_set() else self._options.concurrency - self._busy

    def _receive(self, free: int) -> tuple[str, list[Any]]:
        order = self._picker.order()
        for lane in order:
            messages = self._receive_from(lane, free, wait_sec=0)
            if messages:
                return lane, messages
        return order[0], self._receive_from(order[0], free, wait_sec=IDLE_WAIT_SEC)

    def _receive_from(self, lane: str, free: int, wait_sec: int) -> list[Any]:
        resp = self._sqs.receive_message(
            QueueUrl=self._urls[lane],
            MaxNumberOfMessages=min(MAX_RECEIVE, free),
            WaitTimeSeconds=wait_sec,
            VisibilityTimeout=self._visibility,
        )
        return list(resp.get("Messages", []))

    def _run(self, lane: str, received: dict[str, Any]) -> None:
        try:
            self._handle(lane, received)
        finally:
            with self._slots:
                self._busy -= 1
                self.processed += 1
                self._slots.notify_all()

    def _handle(self, lane: str, received: dict[str, Any]) -> None:
        receipt = received["ReceiptHandle"]
        try:
            message = LaneMessage.model_validate_json(received["Body"])
        except ValidationError:
            # Not ours to judge: left alone, it ends in the lane's dead-letter queue.
            logger.error("not a lane message", message_id=received.get("MessageId"))
            return
        deleted = threading.Event()

        def released() -> None:
            deleted.set()
            self.deletes.add(lane, receipt, message.execution_id)

        try:
            outcome = self._runner.process(message, host=self._host, on_release=released)
        except Exception:  # noqa: BLE001 - one message's infrastructure error must not end the slot
            logger.exception("execution not processed", execution_id=message.execution_id)
            if not deleted.is_set():
                # Not yet released: the message is the execution's way back.
                self._change_visibility(lane, receipt, INFRA_RETRY_SEC)
            return
        log_outcome(outcome, execution_id=message.execution_id, attempt=message.attempt)
        if self._emit is not None:
            record_outcome(outcome, self._emit)
        if not deleted.is_set():
            self.deletes.add(lane, receipt, message.execution_id)

    def _change_visibility(self, lane: str, receipt: str, seconds: int) -> None:
        try:
            self._sqs.change_message_visibility(
                QueueUrl=self._urls[lane], ReceiptHandle=receipt, VisibilityTimeout=seconds
            )
        except (ClientError, BotoCoreError):
            logger.warning("message visibility not changed", lane=lane, seconds=seconds)
