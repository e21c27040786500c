"""`takt worker` deletes its lane messages ten to a request (takt.worker.deletes).

A `DeleteMessage` an execution was about one SQS request an execution; a `DeleteMessageBatch`
carries ten for the price of one. Each test drives `MessageDeletes` over a fake SQS that logs
every batch, with a fake monotonic clock, so when a batch goes out is decided by the test.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any, cast

import pytest
from botocore.exceptions import ClientError

from takt.observability import logger
from takt.worker.deletes import MAX_BATCH, MessageDeletes

URLS = {"default": "https://sqs.test/default", "low": "https://sqs.test/low"}
FLUSH_SEC = 0.1
JOIN_SEC = 10.0


class FakeSqs:
    """DeleteMessageBatch, logged as (queue URL, receipts); `refuse` names receipts SQS fails,
    and `down` makes the whole request fail."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, list[str]]] = []
        self.refuse: set[str] = set()
        self.down = False

    def delete_message_batch(self, **params: Any) -> dict[str, Any]:
        if self.down:
            raise ClientError({"Error": {"Code": "InternalError"}}, "DeleteMessageBatch")
        entries = params["Entries"]
        self.batches.append((params["QueueUrl"], [e["ReceiptHandle"] for e in entries]))
        failed = [
            {"Id": e["Id"], "Code": "ReceiptHandleIsInvalid", "SenderFault": True}
            for e in entries
            if e["ReceiptHandle"] in self.refuse
        ]
        return {"Successful": [], "Failed": failed}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def warnings() -> Iterator[io.StringIO]:
    """takt's WARNING lines, as Powertools writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    handler.setLevel(logging.WARNING)
    underlying = logging.getLogger(logger.name)
    underlying.addHandler(handler)
    try:
        yield stream
    finally:
        underlying.removeHandler(handler)


def _deletes(sqs: FakeSqs, clock: Clock) -> MessageDeletes:
    return MessageDeletes(cast(Any, sqs), URLS, flush_sec=FLUSH_SEC, monotonic=clock)


def _not_deleted(stream: io.StringIO) -> list[str]:
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [line["execution_id"] for line in lines if line["message"] == "message not deleted"]


def test_ten_waiting_receipts_of_a_lane_go_in_one_request_at_once() -> None:
    sqs, clock = FakeSqs(), Clock()
    deletes = _deletes(sqs, clock)

    for n in range(MAX_BATCH):
        deletes.add("default", f"r{n}", f"e{n}")

    assert sqs.batches == [(URLS["default"], [f"r{n}" for n in range(MAX_BATCH)])], (
        "ten deletes for one SQS request: the tenth sends the batch without waiting"
    )
    assert deletes.waiting() == []


def test_fewer_than_ten_wait_for_the_flush_interval_and_no_longer() -> None:
    sqs, clock = FakeSqs(), Clock()
    deletes = _deletes(sqs, clock)
    deletes.add("default", "r0", "e0")
    clock.now = 0.05
    deletes.add("default", "r1", "e1")

    clock.now = 0.09
    next_in = deletes.flush_due()
    held = list(sqs.batches)
    clock.now = FLUSH_SEC
    deletes.flush_due()

    assert held == [], "nothing sent before the oldest receipt waited the flush interval"
    assert next_in == pytest.approx(0.01), "the flusher wakes when the oldest is due"
    assert sqs.batches == [(URLS["default"], ["r0", "r1"])], (
        "a leased run's message leaves the lane's in-flight count within the flush interval"
    )


def test_each_lanes_receipts_are_deleted_from_its_own_queue() -> None:
    sqs, clock = FakeSqs(), Clock()
    deletes = _deletes(sqs, clock)
    deletes.add("default", "d0", "e0")
    deletes.add("low", "l0", "e1")

    clock.now = FLUSH_SEC
    assert deletes.flush_due() is None

    assert sorted(sqs.batches) == [(URLS["default"], ["d0"]), (URLS["low"], ["l0"])]


def test_at_close_every_receipt_still_waiting_is_sent() -> None:
    sqs, clock = FakeSqs(), Clock()
    deletes = _deletes(sqs, clock)
    flusher = threading.Thread(target=deletes.run, daemon=True)
    flusher.start()
    deletes.add("default", "r0", "e0")
    deletes.add("default", "r1", "e1")

    deletes.close()
    flusher.join(timeout=JOIN_SEC)

    assert not flusher.is_alive()
    assert sqs.batches == [(URLS["default"], ["r0", "r1"])], (
        "a worker that stops sends the deletes it holds, so their messages do not come back"
    )


def test_a_refused_entry_is_logged_with_its_execution_and_left_to_come_back(
    warnings: io.StringIO,
) -> None:
    sqs, clock = FakeSqs(), Clock()
    sqs.refuse = {"r1"}
    deletes = _deletes(sqs, clock)
    for n in range(3):
        deletes.add("default", f"r{n}", f"e{n}")

    clock.now = FLUSH_SEC
    deletes.flush_due()
    clock.now = 2 * FLUSH_SEC
    deletes.flush_due()

    assert _not_deleted(warnings) == ["e1"], "a failed entry is logged with its execution id"
    assert sqs.batches == [(URLS["default"], ["r0", "r1", "r2"])], (
        "and left: its message comes back and is dropped as a duplicate by the lease"
    )


def test_a_batch_sqs_refuses_whole_is_logged_entry_by_entry_and_never_raises(
    warnings: io.StringIO,
) -> None:
    sqs, clock = FakeSqs(), Clock()
    sqs.down = True
    deletes = _deletes(sqs, clock)
    for n in range(MAX_BATCH):
        deletes.add("default", f"r{n}", f"e{n}")

    assert _not_deleted(warnings) == [f"e{n}" for n in range(MAX_BATCH)], (
        "a slot thread that completes a batch is never ended by SQS's error"
    )
