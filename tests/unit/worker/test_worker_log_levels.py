"""What a processed message's line costs: a success at DEBUG, a failure at WARNING, and `takt
worker`'s one INFO line a flush counting its runs (logs are billed by the byte: docs/CAPACITY.md,
"Cost per million")."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from takt.observability import MetricUnit
from takt.worker.metrics import FAILED_STATES, MetricPublisher, log_outcome
from takt.worker.runner import RunOutcome
from takt_cli.capacity.cost import LogsAndMetrics
from tests.support.logs import captured_log

# What Powertools' `inject_lambda_context` adds to every line.
LAMBDA_CONTEXT_KEYS = frozenset(
    {
        "cold_start",
        "function_name",
        "function_memory_size",
        "function_arn",
        "function_request_id",
        "xray_trace_id",
    }
)


class _CloudWatch:
    """PutMetricData, remembered."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def put_metric_data(self, **request: Any) -> None:
        self.sent.append(request)


@pytest.fixture
def raw_lines() -> Iterator[io.StringIO]:
    """Every line takt logs, DEBUG included, exactly as Powertools formats it."""
    with captured_log(logging.DEBUG) as stream:
        yield stream


@pytest.mark.parametrize(
    ("state", "level"),
    [
        ("succeeded", "DEBUG"),
        *[(state, "WARNING") for state in sorted(FAILED_STATES)],
        ("skipped", "INFO"),
        ("cancelled", "INFO"),
        ("given_back", "INFO"),
    ],
)
def test_a_success_is_logged_at_debug_and_every_failure_at_warning_with_its_execution_id(
    raw_lines: io.StringIO, state: str, level: str
) -> None:
    log_outcome(RunOutcome("e-1", state, "why"), execution_id="e-1")

    (line,) = raw_lines.getvalue().splitlines()
    assert f'"level":"{level}"' in line and '"execution_id":"e-1"' in line, (
        f"a run that ended {state} is logged at {level} with its execution id: {line}"
    )


def test_takt_worker_logs_one_info_line_a_flush_counting_its_runs_at_the_priced_bytes(
    raw_lines: io.StringIO,
) -> None:
    publisher = MetricPublisher(_CloudWatch(), "takt")  # type: ignore[arg-type]
    for _ in range(11_999):
        publisher.add("Succeeded", MetricUnit.Count, 1)
    publisher.add("Failed", MetricUnit.Count, 1)
    publisher.add("ScheduleLag", MetricUnit.Milliseconds, 120)

    publisher.flush()

    (line,) = raw_lines.getvalue().splitlines()
    record = json.loads(line)
    assert (record["level"], record["Succeeded"], record["Failed"]) == ("INFO", 11_999, 1)
    # A Lambda handler run earlier in this process leaves its context's keys on the logger;
    # `takt worker` never has them.
    alone = {key: value for key, value in record.items() if key not in LAMBDA_CONTEXT_KEYS}
    written = len(json.dumps(alone, separators=(",", ":"))) + 1
    priced = LogsAndMetrics().bytes_per_task_minute_line
    assert written == pytest.approx(priced, abs=20), (
        f"the cost model prices takt worker's line a flush at {priced:g} bytes; it wrote {written}"
    )
