"""The worker Lambda runs a batch's messages at once, and still reports failures per message."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import EventType

from functions.worker.handler import handler as worker_handler
from takt.clock import ManualClock
from takt.models.lanes import Outgoing
from takt.models.records import ExecState
from takt.wiring import Services, install
from takt.worker.batch import ConcurrentBatchProcessor
from takt_cli.local.events import LocalContext, sqs_event
from tests.integration.worker import handlers
from tests.integration.worker.conftest import stored, submit_to

LANE_ARN = "arn:aws:sqs:us-east-1:000000000000:takt-default"


def _invoke(svc: Services, bodies: list[str]) -> Any:
    event = sqs_event(
        LANE_ARN,
        [
            {"MessageId": f"m-{i}", "ReceiptHandle": f"r-{i}", "Body": body}
            for i, body in enumerate(bodies)
        ],
    )
    install(svc)
    try:
        return worker_handler(event, LocalContext("takt-worker"))
    finally:
        install(None)


def test_every_message_of_a_batch_is_running_before_any_of_them_finishes(
    svc: Services, clock: ManualClock, key: str
) -> None:
    parties = 6
    records = [
        submit_to(svc, clock, "handler:it.rendezvous", {"key": key, "parties": parties})[0]
        for _ in range(parties)
    ]

    answer = _invoke(svc, [Outgoing.of(r).message.model_dump_json() for r in records])

    assert answer == {"batchItemFailures": []}
    assert [stored(svc, r).state for r in records] == [ExecState.SUCCEEDED] * parties
    assert sorted(c.execution_id for c in handlers.calls(key)) == sorted(
        r.execution_id for r in records
    )


def test_a_message_that_cannot_be_read_fails_alone_while_the_rest_of_its_batch_runs(
    svc: Services, clock: ManualClock, key: str
) -> None:
    records = [submit_to(svc, clock, "handler:it.ok", {"key": key})[0] for _ in range(3)]
    bodies = [Outgoing.of(r).message.model_dump_json() for r in records]

    answer = _invoke(svc, [bodies[0], "{not json", bodies[1], bodies[2]])

    assert answer == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    assert [stored(svc, r).state for r in records] == [ExecState.SUCCEEDED] * 3


def test_a_batch_processor_needs_at_least_one_record_at_a_time() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ConcurrentBatchProcessor(EventType.SQS, concurrency=0)
