"""What the worker function logs and emits per execution on its happy path, counted on a real run:
executions on moto, HTTP calls to a loopback receiver, the worker handler invoked with the lane's
messages as the event source mapping hands them over.

CloudWatch bills logs by the byte ingested (docs/CAPACITY.md prices them per execution), so the
happy path is held to one INFO line per execution and one EMF document per invocation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.worker.handler import handler as worker_handler
from takt.clock import ManualClock
from takt.models.lanes import Outgoing
from takt.models.records import JobStatus
from takt.observability import logger
from takt.wiring import Services, install
from takt_cli.local.events import LocalContext, sqs_event
from tests.integration.worker.conftest import NOON
from tests.support.jobs import make_execution, make_job, store_execution
from tests.support.receiver import Receiver

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

BATCH = 10


@pytest.fixture
def installed(svc: Services, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    """`svc` as the handler's services, printing EMF as in Lambda."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    install(svc)
    try:
        yield svc
    finally:
        install(None)


def _batch(svc: Services, clock: ManualClock, url: str) -> list[dict[str, Any]]:
    """`BATCH` executions of one-off jobs calling `url`, sent and received from their lane."""
    for _ in range(BATCH):
        job = make_job(
            now=clock.now(),
            next_run_time=None,
            run_at=NOON,
            target=url,
            status=JobStatus.COMPLETED,
        )
        svc.jobs.create(job)
        record = store_execution(svc, make_execution(job, NOON, clock.now()), clock.now())
        svc.lanes.send([Outgoing.of(record)])
    received: list[dict[str, Any]] = []
    while len(received) < BATCH:
        messages = svc.clients.sqs.receive_message(
            QueueUrl=svc.settings.lane_url("default"), MaxNumberOfMessages=10
        ).get("Messages", [])
        assert messages, "the lane ran dry before the batch was received"
        received += [dict(message) for message in messages]
    return received


def _emf_documents(output: str) -> list[dict[str, Any]]:
    documents = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    return [document for document in documents if "_aws" in document]


def test_a_batch_logs_one_info_line_per_execution_and_one_emf_document(
    installed: Services,
    clock: ManualClock,
    receiver: Receiver,
    log_lines: Callable[[], list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    svc = installed
    clock.set(NOON)
    received = _batch(svc, clock, receiver.url)
    capsys.readouterr()
    context = cast(LambdaContext, LocalContext(function_name="worker", timeout_ms=60_000))

    response = worker_handler(sqs_event("arn:aws:sqs:us-east-1:0:lane", received), context)

    assert response == {"batchItemFailures": []}
    assert len(receiver.calls) == BATCH
    info = [line for line in log_lines() if line["level"] == "INFO"]
    per_execution: dict[str, int] = {}
    for line in info:
        per_execution[line["execution_id"]] = per_execution.get(line["execution_id"], 0) + 1
    assert len(info) == BATCH
    assert set(per_execution.values()) == {1}
    # Aggregated per invocation: one document, the ten successes one value of 10, and each
    # run's start lag a value of its own.
    (document,) = _emf_documents(capsys.readouterr().out)
    assert document["Succeeded"] == [10.0]
    assert len(document["ScheduleLag"]) == BATCH


def test_a_sampled_invocation_adds_the_debug_lines_of_its_runs(
    installed: Services,
    clock: ManualClock,
    receiver: Receiver,
    log_lines: Callable[[], list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Powertools' sample rate (POWERTOOLS_LOGGER_SAMPLE_RATE, 0.01 deployed) decides per
    invocation; at 1.0 every invocation is sampled."""
    svc = installed
    clock.set(NOON)
    received = _batch(svc, clock, receiver.url)
    monkeypatch.setattr(logger, "sampling_rate", 1.0)
    context = cast(LambdaContext, LocalContext(function_name="worker", timeout_ms=60_000))
    try:
        worker_handler(sqs_event("arn:aws:sqs:us-east-1:0:lane", received), context)
    finally:
        monkeypatch.setattr(logger, "sampling_rate", 0.0)
        logger.refresh_sample_rate_calculation()

    received_lines = [line for line in log_lines() if line["message"] == "execution received"]
    assert {line["level"] for line in received_lines} == {"DEBUG"}
    assert len({line["execution_id"] for line in received_lines}) == BATCH
