"""Metrics reach in-process listeners as well as Powertools, and log keys stay in their thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from functions.api.handler import ids_in
from takt.observability import MetricUnit, add_metric, listen, log_keys, logger, metrics


@pytest.fixture(autouse=True)
def _clear_metrics() -> None:
    metrics.clear_metrics()


def test_a_recorded_metric_reaches_every_listener() -> None:
    seen: list[tuple[str, MetricUnit, float]] = []
    stop = listen(lambda *value: seen.append(value))
    try:
        add_metric("Succeeded", MetricUnit.Count, 1)
    finally:
        stop()

    assert seen == [("Succeeded", MetricUnit.Count, 1)]


def test_a_listener_that_stopped_hears_nothing() -> None:
    seen: list[str] = []
    stop = listen(lambda name, unit, value: seen.append(name))
    stop()

    add_metric("Succeeded", MetricUnit.Count, 1)

    assert seen == []


def test_log_keys_are_on_lines_inside_the_block_only(
    log_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    with log_keys(job_id="job_1", execution_id="job_1.20260302T120000000Z", attempt=None):
        logger.warning("inside")
    logger.warning("outside")

    inside, outside = log_lines()
    assert (inside["job_id"], inside["execution_id"]) == ("job_1", "job_1.20260302T120000000Z")
    assert "attempt" not in inside
    assert "job_id" not in outside


def test_log_keys_of_one_thread_are_not_on_another_threads_lines(
    log_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    entered, done = threading.Event(), threading.Event()

    def hold_keys() -> None:
        with log_keys(job_id="job_other"):
            entered.set()
            done.wait(5)

    thread = threading.Thread(target=hold_keys)
    thread.start()
    entered.wait(5)
    logger.warning("here")
    done.set()
    thread.join()

    (line,) = log_lines()
    assert line["message"] == "here"
    assert "job_id" not in line


@pytest.mark.parametrize(
    ("path", "ids"),
    [
        ("/v1/jobs", {"job_id": None, "execution_id": None}),
        ("/v1/jobs/job_01a/preview", {"job_id": "job_01a", "execution_id": None}),
        (
            "/v1/executions/job_01a.20260302T120000000Zm/retry",
            {"job_id": "job_01a", "execution_id": "job_01a.20260302T120000000Zm"},
        ),
        ("/v1/stats", {"job_id": None, "execution_id": None}),
    ],
)
def test_the_api_names_the_job_and_execution_of_a_path(
    path: str, ids: dict[str, str | None]
) -> None:
    assert ids_in(path) == ids
