"""The lane messages `takt worker` is done with, deleted ten to a request.

A worker deletes a run's message once its lease is taken, and a message that took no lease once
the runner returns (takt.worker.process). One `DeleteMessage` each made the deletes about one
SQS request an execution; SQS bills a `DeleteMessageBatch` of up to ten entries as one request.
So the receipts wait here, per lane, and are sent when ten are waiting, when the oldest has
waited `flush_sec`, or when the worker stops (`close`).

Waiting changes nothing a run relies on: by the time its receipt is here, the execution's
recovery rests on its lease or its recorded outcome, not on the message. A receipt still waiting
when the process dies, or an entry SQS refuses, leaves the message to come back after its
visibility (twice the lease), and that copy is dropped as a duplicate by the lease's condition,
as a message whose single delete failed always was. `flush_sec` only bounds how long a leased
run's message still counts among the lane's in-flight messages (SQS allows 120,000 a queue).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from takt.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import DeleteMessageBatchRequestEntryTypeDef

# SQS's most entries in one DeleteMessageBatch.
MAX_BATCH = 10
FLUSH_SEC = 0.1


@dataclass(frozen=True)
class _Waiting:
    receipt: str
    execution_id: str
    since: float


class MessageDeletes:
    """Receipts waiting to be deleted, per lane; `run` (in a thread of its own) sends those that
    waited `flush_sec`, `add` a lane's ten at once, `close` whatever is left."""

    def __init__(
        self,
        sqs: SQSClient,
        urls: Mapping[str, str],
        *,
        flush_sec: float = FLUSH_SEC,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sqs = sqs
        self._urls = dict(urls)
        self._flush_sec = flush_sec
        self._monotonic = monotonic
        self._waiting: dict[str, list[_Waiting]] = {lane: [] for lane in urls}
        self._changed = threading.Condition()
        self._closed = False

    def add(self, lane: str, receipt: str, execution_id: str) -> None:
        """Queue a message's delete; the caller sends the batch it completes."""
        with self._changed:
            batch = self._waiting[lane]
            batch.append(_Waiting(receipt, execution_id, self._monotonic()))
            if len(batch) < MAX_BATCH:
                self._changed.notify_all()
                return
            self._waiting[lane] = []
        self._send(lane, batch)

    def waiting(self) -> list[str]:
        """The receipts not sent yet, every lane's."""
        with self._changed:
            return [w.receipt for batch in self._waiting.values() for w in batch]

    def flush_due(self) -> float | None:
        """Send every lane's receipts whose oldest waited `flush_sec`; the seconds until the
        next lane's are due, or None when nothing waits."""
        now = self._monotonic()
        due: list[tuple[str, list[_Waiting]]] = []
        next_in: float | None = None
        with self._changed:
            for lane, batch in self._waiting.items():
                if not batch:
                    continue
                left = batch[0].since + self._flush_sec - now
                if left <= 0:
                    due.append((lane, batch))
                    self._waiting[lane] = []
                else:
                    next_in = left if next_in is None else min(next_in, left)
        for lane, batch in due:
            self._send(lane, batch)
        return next_in

    def run(self) -> None:
        """Send receipts as they come due until `close`, then every one left."""
        while True:
            next_in = self.flush_due()
            with self._changed:
                if self._closed:
                    break
                if next_in is None and not any(self._waiting.values()):
                    self._changed.wait()
                elif next_in is not None:
                    self._changed.wait(next_in)
        self.flush_all()

    def close(self) -> None:
        """Stop `run`, which then sends every receipt left."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def flush_all(self) -> None:
        with self._changed:
            batches = [(lane, batch) for lane, batch in self._waiting.items() if batch]
            self._waiting = {lane: [] for lane in self._urls}
        for lane, batch in batches:
            self._send(lane, batch)

    def _send(self, lane: str, batch: list[_Waiting]) -> None:
        entries: list[DeleteMessageBatchRequestEntryTypeDef] = [
            {"Id": str(i), "ReceiptHandle": w.receipt} for i, w in enumerate(batch)
        ]
        try:
            resp = self._sqs.delete_message_batch(QueueUrl=self._urls[lane], Entries=entries)
        except (ClientError, BotoCoreError):
            failed = [w.execution_id for w in batch]
        else:
            failed = [batch[int(entry["Id"])].execution_id for entry in resp.get("Failed", [])]
        for execution_id in failed:
            # It comes back and is dropped as a duplicate: the lease or the outcome is recorded.
            logger.warning("message not deleted", execution_id=execution_id)
