"""What the worker function logs and emits per execution on its happy path, counted on a real run:
executions on moto, HTTP calls to a loopback receiver, the worker handler invoked with the lane's
messages as the event source mapping hands them over.

CloudWatch bills logs by the byte ingested (docs/CAPACITY.md prices them per execution), so the
happy path is held to one INFO line and one EMF document per invocation (each success only at
DEBUG), every failure keeps a WARNING line with its execution id, and the bytes a batch writes are
the ones the cost model (`LogsAndMetrics`) prices.
"""

from __future__ import annotations

import json
import logging
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
from takt_cli.capacity.cost import LogsAndMetrics
from takt_cli.local.events import LocalContext, sqs_event
from tests.integration.worker.conftest import NOON
from tests.support.jobs import make_execution, make_job, store_execution
from tests.support.logs import captured_log
from tests.support.receiver import Receiver

# The longest name Lambda gives a function (64 characters), as the CDK names it: Powertools adds
# the name and the ARN to every line, so the cloud's lines are this long at most.
CDK_FUNCTION_NAME = "takt-stateless-WorkerFunction1A2B3C4D-" + "AbCdEfGhIjKlMnOpQrStUvWxYz"

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


def _invoke(received: list[dict[str, Any]], function_name: str = "worker") -> Any:
    context = cast(LambdaContext, LocalContext(function_name=function_name, timeout_ms=60_000))
    return worker_handler(sqs_event("arn:aws:sqs:us-east-1:0:lane", received), context)


@pytest.fixture
def raw_log_lines() -> Iterator[Callable[[], list[str]]]:
    """takt's log lines exactly as Powertools formats them, to count their bytes."""
    with captured_log(logging.INFO) as stream:
        yield lambda: stream.getvalue().splitlines()


def test_a_batch_of_successes_logs_one_info_summary_line_and_one_emf_document(
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

    response = _invoke(received)

    assert response == {"batchItemFailures": []}
    assert len(receiver.calls) == BATCH
    info = [line for line in log_lines() if line["level"] != "DEBUG"]
    assert [(line["message"], line["messages"], line["Succeeded"]) for line in info] == [
        ("batch processed", BATCH, BATCH)
    ], "logs by the byte: a batch of successes logs one INFO line counting them, none a run"
    # Aggregated per invocation: one document, the ten successes one value of 10, and each
    # run's start lag a value of its own.
    (document,) = _emf_documents(capsys.readouterr().out)
    assert document["Succeeded"] == [10.0]
    assert len(document["ScheduleLag"]) == BATCH


def test_every_failed_run_keeps_a_warning_line_with_its_execution_id(
    installed: Services,
    clock: ManualClock,
    receiver: Receiver,
    log_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    svc = installed
    clock.set(NOON)
    received = _batch(svc, clock, receiver.url)
    receiver.fail(3)

    _invoke(received)

    failed = [line for line in log_lines() if line["message"] == "execution processed"]
    assert {(line["level"], line["state"]) for line in failed} == {("WARNING", "retry_wait")}
    assert len({line["execution_id"] for line in failed}) == 3, (
        "every failure is logged at WARNING with its execution id, however successes are logged"
    )
    (summary,) = [line for line in log_lines() if line["message"] == "batch processed"]
    assert (summary["Succeeded"], summary["Retried"]) == (BATCH - 3, 3)


def test_a_batchs_log_bytes_are_what_the_cost_model_prices(
    installed: Services,
    clock: ManualClock,
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
    raw_log_lines: Callable[[], list[str]],
) -> None:
    """Everything the handler writes for a batch of successes, its summary line and its EMF
    document with a CDK-named function's keys, is held to `LogsAndMetrics`'s figures: the line
    and the document's fixed part to their bytes within a few, and a value a run."""
    svc = installed
    clock.set(NOON)
    received = _batch(svc, clock, receiver.url)
    capsys.readouterr()

    _invoke(received, CDK_FUNCTION_NAME)

    (summary,) = [line for line in raw_log_lines() if '"batch processed"' in line]
    (document,) = [line for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    model = LogsAndMetrics()
    summary_bytes = len(summary) + 1
    lags = json.loads(document)["ScheduleLag"]
    fixed_bytes = len(document) + 1 - len(",".join(map(str, lags)))
    assert summary_bytes == pytest.approx(model.bytes_per_summary_line, abs=20), (
        f"the cost model prices the batch's INFO line at {model.bytes_per_summary_line:g} "
        f"bytes; the handler wrote {summary_bytes}"
    )
    assert fixed_bytes == pytest.approx(model.emf_bytes_fixed, abs=20), (
        f"the cost model prices the EMF document's fixed part at {model.emf_bytes_fixed:g} "
        f"bytes and a value a run; the handler wrote {fixed_bytes} and {len(lags)} values"
    )
    assert len(lags) == BATCH


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
    # Powertools decides again at each invocation but the cold start (the first in a process,
    # which under xdist this one may be), so it is decided here too.
    logger.refresh_sample_rate_calculation()
    try:
        _invoke(received)
    finally:
        monkeypatch.setattr(logger, "sampling_rate", 0.0)
        logger.refresh_sample_rate_calculation()

    for message in ("execution received", "execution processed"):
        sampled = [line for line in log_lines() if line["message"] == message]
        assert {line["level"] for line in sampled} == {"DEBUG"}
        assert len({line["execution_id"] for line in sampled}) == BATCH, (
            f"a sampled invocation logs {message!r} for each run, at DEBUG"
        )
