"""Every path that serves a role emits the metrics `infra/metric_names.py` assigns to that role.

The dashboard and the alarms read metric names (tests/infra/test_infra_metric_paths.py checks
that each one they read is declared there, with the paths that serve it). Here each path runs for
real on moto and what it actually sent is read back: the Lambda handlers' EMF lines from standard
output, and `takt worker`'s PutMetricData calls from moto's CloudWatch. A path that computes a
metric but never records it (the claimer's dispatch lag, the Fargate worker's whole set) fails.
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.claimer.handler import handler as claimer_handler
from functions.scheduler.handler import handler as scheduler_handler
from functions.scheduler.handler import record_tick
from functions.watchdog.handler import record_sweep
from functions.worker.handler import handler as worker_handler
from infra import metric_names
from takt.aws import make_cloudwatch_client
from takt.clock import ManualClock
from takt.dispatch.claimer import ClaimResult
from takt.dispatch.ticker import TickResult
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import RetryPolicy
from takt.observability import MetricUnit, metrics
from takt.watchdog.sweeper import SweepResult
from takt.wiring import Services, install
from takt.worker.metrics import MetricPublisher, record_outcome
from takt.worker.process import WorkerOptions, WorkerProcess
from takt.worker.runner import RunOutcome
from takt_cli.local.events import LocalContext, sqs_event
from tests.integration.worker.conftest import NOON, runner_for, submit_to
from tests.support.jobs import TENANT, job_id_in_shard, make_job
from tests.support.threads import poll_until

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _serving(path: str) -> set[str]:
    return {metric.name for metric in metric_names.ALL if path in metric.paths}


def _emf_names(output: str) -> set[str]:
    """The metric names in the EMF lines Powertools printed."""
    names: set[str] = set()
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        document = json.loads(line)
        for directive in document.get("_aws", {}).get("CloudWatchMetrics", []):
            names |= {metric["Name"] for metric in directive["Metrics"]}
    return names


def _context(name: str, timeout_ms: int = 60_000) -> LambdaContext:
    return cast(LambdaContext, LocalContext(function_name=name, timeout_ms=timeout_ms))


def _worker_messages(svc: Services, clock: ManualClock, key: str) -> list[LaneMessage]:
    """One execution per worker outcome the dashboard counts: it succeeds, is refused for good,
    fails with retries left, and fails on its last attempt."""
    payload = {"key": key}
    return [
        submit_to(svc, clock, "handler:it.ok", payload)[1],
        submit_to(svc, clock, "handler:it.refuse", payload)[1],
        submit_to(svc, clock, "handler:it.fail", payload)[1],
        submit_to(svc, clock, "handler:it.fail", payload, retry=RetryPolicy(max_attempts=1))[1],
    ]


@pytest.fixture
def installed(svc: Services, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`svc` as the handlers' services, with Powertools printing EMF as in Lambda (the suite
    turns it off elsewhere)."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    install(svc)
    try:
        yield svc
    finally:
        install(None)


def test_the_worker_function_emits_the_worker_metrics(
    installed: Services, clock: ManualClock, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    svc = installed
    for message in _worker_messages(svc, clock, key):
        svc.lanes.send([Outgoing(lane="default", message=message)])
    received = [
        dict(message)
        for message in svc.clients.sqs.receive_message(
            QueueUrl=svc.settings.lane_url("default"), MaxNumberOfMessages=10
        )["Messages"]
    ]
    capsys.readouterr()

    worker_handler(sqs_event("arn:aws:sqs:us-east-1:0:lane", received), _context("worker"))

    emitted = _emf_names(capsys.readouterr().out)
    assert _serving("worker function") - {"StaleReportFenced", "LeaseLost"} <= emitted


def test_takt_worker_publishes_the_worker_metrics_to_cloudwatch(
    svc: Services, clock: ManualClock, key: str
) -> None:
    namespace = f"takt-{uuid.uuid4().hex[:8]}"
    cloudwatch = make_cloudwatch_client(svc.settings)
    publisher = MetricPublisher(cloudwatch, namespace)
    messages = _worker_messages(svc, clock, key)
    for message in messages:
        svc.lanes.send([Outgoing(lane="default", message=message)])
    process = WorkerProcess(
        svc.settings,
        svc.clients.sqs,
        runner_for(svc),
        WorkerOptions(lanes=("default",), concurrency=2),
        emit=publisher.add,
    )
    loop = threading.Thread(target=process.run, daemon=True)
    loop.start()
    try:
        poll_until(lambda: process.processed >= len(messages), "every message processed")
    finally:
        process.stop()
        loop.join(timeout=15)
    publisher.flush()

    listed = cloudwatch.list_metrics(Namespace=namespace)["Metrics"]
    emitted = {metric["MetricName"] for metric in listed}
    assert _serving("takt worker") - {"StaleReportFenced", "LeaseLost"} <= emitted
    assert {d["Name"]: d["Value"] for d in listed[0]["Dimensions"]} == {"service": "takt"}


@pytest.mark.parametrize("path", ["worker function", "takt worker"])
def test_a_lost_lease_is_counted_on_both_worker_paths(path: str) -> None:
    """A lease lost needs heartbeats failing mid-run (test_worker_lease_lost.py); both paths
    count it through `record_outcome`."""
    names: list[str] = []

    record_outcome(RunOutcome("e-1", "lease_lost"), lambda name, unit, value: names.append(name))

    assert "LeaseLost" in _serving(path)
    assert names == ["LeaseLost"]


@pytest.mark.parametrize("path", ["worker function", "takt worker"])
def test_a_fenced_report_is_counted_on_both_worker_paths(path: str) -> None:
    """Fencing needs a lease taken over mid-run; both paths count it through `record_outcome`."""
    names: list[str] = []

    record_outcome(RunOutcome("e-1", "fenced"), lambda name, unit, value: names.append(name))

    assert "StaleReportFenced" in _serving(path)
    assert names == ["StaleReportFenced"]


def test_the_claimer_emits_the_dispatch_metrics_in_lambda_fan_out_mode(
    installed: Services, clock: ManualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    svc = installed
    job_id = job_id_in_shard(TENANT, 1, svc.settings.due_shards)
    svc.jobs.create(
        make_job(now=NOON, job_id=job_id, run_at=NOON, next_run_time=NOON, target="https://x/")
    )
    svc.due.put(TENANT, job_id, NOON, NOON)
    clock.set(NOON + timedelta(milliseconds=1500))
    capsys.readouterr()

    result = claimer_handler({"minute": NOON.isoformat(), "shard": 1}, _context("claimer"))

    assert result["dispatched"] == 1
    assert _serving("claimer") <= _emf_names(capsys.readouterr().out)


def test_the_inline_scheduler_emits_the_dispatch_metrics(
    installed: Services, clock: ManualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    svc = installed
    job_id = job_id_in_shard(TENANT, 0, svc.settings.due_shards)
    svc.jobs.create(
        make_job(now=NOON, job_id=job_id, run_at=NOON, next_run_time=NOON, target="https://x/")
    )
    svc.due.put(TENANT, job_id, NOON, NOON)
    clock.set(NOON + timedelta(milliseconds=1500))
    capsys.readouterr()

    scheduler_handler({"ticks": 1}, _context("scheduler", timeout_ms=3000))

    # Nothing was skipped, and a count of zero is not published (`add_counts`): the next test
    # shows Skipped sent when a tick has one.
    assert _serving("inline scheduler") - {"Skipped"} <= _emf_names(capsys.readouterr().out)


def test_the_scheduler_sends_every_count_it_serves_once_it_has_one(
    installed: Services, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()

    record_tick(TickResult(claims=1, total=ClaimResult(due=2, dispatched=1, skipped=1)))
    metrics.flush_metrics()

    assert {"Dispatched", "Skipped"} <= _emf_names(capsys.readouterr().out), (
        "every count the dashboard reads from the scheduler is sent when it is not zero"
    )


def test_the_watchdog_sends_every_count_it_serves_once_it_has_one(
    installed: Services, capsys: pytest.CaptureFixture[str]
) -> None:
    """An idle sweep sends no zeros (`add_counts`; `WatchdogRecoveries` fills a missing value
    with 0), so each count is shown sent by a sweep that has one of each."""
    capsys.readouterr()

    record_sweep(SweepResult(resent=1, lease_expired=1, dead=1, retries_released=1))
    metrics.flush_metrics()

    assert _serving("watchdog") <= _emf_names(capsys.readouterr().out), (
        "every count the dashboard and alarms read from the watchdog is sent when not zero"
    )


def test_metric_units_match_what_the_paths_record() -> None:
    units = {metric.name: metric.unit for metric in metric_names.ALL}

    assert units["ScheduleLag"] == MetricUnit.Milliseconds.value
    assert units["DispatchLag"] == MetricUnit.Milliseconds.value
