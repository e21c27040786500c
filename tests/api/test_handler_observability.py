"""What the worker and watchdog functions tell operators: log lines naming the execution, and
the metrics the dashboard, the alarms and `/v1/stats` read."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from functions.scheduler.handler import record_tick
from functions.watchdog.handler import handler as watchdog_handler
from functions.watchdog.handler import record_sweep
from functions.worker.handler import handler as worker_handler
from takt.dispatch.claimer import ClaimResult
from takt.dispatch.ticker import TickResult
from takt.models.records import ExecState, ExecutionRecord
from takt.observability import listen
from takt.watchdog.sweeper import SweepResult
from takt_cli.local.runtime import free_port
from tests.api.harness import Api
from tests.api.test_handler_sample_events import NOON, event, invoke, store_job

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

LogLines = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def recorded() -> Iterator[list[tuple[str, float]]]:
    values: list[tuple[str, float]] = []
    stop = listen(lambda name, unit, value: values.append((name, value)))
    try:
        yield values
    finally:
        stop()


def test_a_worker_run_is_logged_with_its_ids_and_counted(
    api: Api, log_lines: LogLines, recorded: list[tuple[str, float]]
) -> None:
    message = json.loads(event("worker_sqs_batch.json")["Records"][0]["body"])
    job = store_job(api.svc, message["job_id"], f"http://127.0.0.1:{free_port()}/hook")
    api.svc.executions.create(
        ExecutionRecord.for_job(job, message["execution_id"], NOON, ExecState.PENDING, NOON),
        check_at_ms=None,
    )

    invoke(worker_handler, "worker_sqs_batch.json")

    (processed,) = [line for line in log_lines() if line["message"] == "execution processed"]
    assert (processed["job_id"], processed["execution_id"], processed["attempt"]) == (
        message["job_id"],
        message["execution_id"],
        message["attempt"],
    )
    assert processed["state"] == "retry_wait"
    assert sorted(name for name, _ in recorded) == ["Retried", "ScheduleLag"]


def test_an_idle_watchdog_sweep_publishes_no_zeros_for_the_idle_cost(
    recorded: list[tuple[str, float]], api: Api
) -> None:
    result = invoke(watchdog_handler, "watchdog_sweep.json", timeout_ms=5000)

    assert (result["resent"], result["dead"]) == (0, 0)
    assert recorded == [], (
        "idle cost: a sweep that found nothing publishes no metric (CloudWatch bills a zero too)"
    )


def test_a_watchdog_sweep_counts_deaths_too(recorded: list[tuple[str, float]]) -> None:
    record_sweep(SweepResult(dead=1, lease_expired=2))

    assert sorted(recorded) == [("Dead", 1), ("LeaseExpired", 2)], (
        "an expired lease on the last attempt is counted as Dead, and only counts found publish"
    )


def test_an_idle_scheduler_tick_publishes_no_zeros_for_the_idle_cost(
    recorded: list[tuple[str, float]],
) -> None:
    record_tick(TickResult(claims=2))
    record_tick(TickResult(claims=2, total=ClaimResult(due=3, dispatched=3)))

    assert recorded == [("Dispatched", 3)], (
        "idle cost: a tick publishes Dispatched and Skipped only when they are not zero"
    )
