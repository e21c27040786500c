"""The cost model prices a per-execution profile at list prices."""

from __future__ import annotations

import math

import pytest

from takt_cli.capacity.cost import (
    FUNCTION_MEMORY_MB,
    CloudModel,
    ExecutionProfile,
    FunctionProfile,
    LogsAndMetrics,
    alternatives,
    cost_per_million,
    default_components,
    fargate_task_hour_usd,
    metered_components,
    worker_wait_usd_per_million,
)
from takt_cli.capacity.model import JobDuration


def _profile(**overrides: object) -> ExecutionProfile:
    base: dict[str, object] = {
        "write_units": {"executions PutItem (claimer)": 4.0},
        "read_units": 2.0,
        "sqs_requests": 0.5,
        "functions": (),
        "log_bytes": 0.0,
        "history_item_bytes": 0.0,
    }
    return ExecutionProfile(**{**base, **overrides})  # type: ignore[arg-type]


def test_dynamodb_sqs_are_priced_per_million_units() -> None:
    report = cost_per_million(_profile(), model=CloudModel(xray_sampled_fraction=0))
    lines = {line.component: line.usd_per_million for line in report.lines}
    assert lines["DynamoDB writes: executions PutItem (claimer)"] == pytest.approx(2.5)
    assert lines["DynamoDB reads"] == pytest.approx(0.25)
    assert lines["SQS requests"] == pytest.approx(0.2)


def test_lambda_is_priced_by_requests_and_gb_seconds_at_its_memory() -> None:
    worker = FunctionProfile("worker", invocations=0.1, cpu_ms=0, aws_calls=0, messages=10)
    model = CloudModel(target_latency_ms=100, hold_ms_per_worker_invocation=0, batch_concurrency=1)
    report = cost_per_million(_profile(functions=(worker,)), model=model)
    lambda_line = next(line for line in report.lines if line.component == "Lambda worker")
    # 0.1 invocations of ten 100 ms calls one after another (1,000 ms) at 1,024 MB: 0.1 GB-s
    # each execution.
    expected = 0.1 * 0.20 + 0.1 * 0.0000133334 * 1e6
    assert lambda_line.usd_per_million == pytest.approx(expected)


def test_a_batch_run_side_by_side_is_billed_for_one_wait_not_ten() -> None:
    worker = FunctionProfile("worker", invocations=0.1, cpu_ms=0, aws_calls=0, messages=10)
    model = CloudModel(target_latency_ms=100, hold_ms_per_worker_invocation=0)
    report = cost_per_million(_profile(functions=(worker,)), model=model)
    lambda_line = next(line for line in report.lines if line.component == "Lambda worker")
    # The ten calls overlap: 0.1 invocations of 100 ms at 1,024 MB.
    expected = 0.1 * 0.20 + 0.01 * 0.0000133334 * 1e6
    assert lambda_line.usd_per_million == pytest.approx(expected)


def test_a_ten_second_call_costs_its_wait_in_worker_lambda_duration() -> None:
    # A million executions in 10,000 batches of 100 at 1,024 MB, each waiting 10 s (less the
    # 50 ms the metered cost already holds): 1 GB x 9.95 s x 10,000.
    at_once = worker_wait_usd_per_million(10.0)
    one_by_one = worker_wait_usd_per_million(10.0, batch_concurrency=1)
    assert at_once == pytest.approx(1e4 * 9.95 * 1.0 * 0.0000133334)
    assert one_by_one == pytest.approx(100 * at_once)


def test_eventbridge_scheduler_with_a_caller_lambda_pays_for_the_call_s_wait() -> None:
    table = alternatives(job_seconds=10.0)
    line = table["EventBridge Scheduler + a Lambda target making the call"]
    # $1 for the schedules, $0.20 of requests, 10 s at 128 MB for each call.
    assert line["usd_per_million"] == pytest.approx(1.2 + 10 * 0.125 * 0.0000133334 * 1e6, abs=0.01)


def test_history_storage_is_charged_for_its_retention() -> None:
    report = cost_per_million(_profile(history_item_bytes=1000), retention_days=30.4)
    line = next(line for line in report.lines if line.component.startswith("DynamoDB storage"))
    assert line.usd_per_million == pytest.approx(0.25)  # 1 GB for a month


def test_step_functions_costs_two_transitions_per_one_off_execution() -> None:
    table = alternatives()
    assert table["Step Functions Standard (Wait state)"]["usd_per_million"] == pytest.approx(50)
    assert table["EventBridge Scheduler"]["usd_per_million"] == pytest.approx(1)


def test_the_memory_table_matches_the_cdk_functions() -> None:
    from infra.functions import SPECS  # noqa: PLC0415 - infra loads aws_cdk, which starts Node.js

    assert {spec.name: spec.memory_mb for spec in SPECS} == dict(FUNCTION_MEMORY_MB)


def test_a_job_duration_is_parsed_and_keeps_its_mean() -> None:
    flat = JobDuration.parse("fixed:10")
    tail = JobDuration.parse("lognormal:10:1.0")

    assert flat == JobDuration(10.0) and flat.groups() == [(10.0, 1.0)]
    assert sum(duration * share for duration, share in tail.groups()) == pytest.approx(10.0)
    # sigma 1: the median is e^-0.5 of the mean, the p99 e^(2.326 - 0.5) of it.
    assert tail.quantile(0.5) == pytest.approx(10 * math.exp(-0.5))
    assert tail.quantile(0.99) == pytest.approx(10 * math.exp(2.3263 - 0.5), rel=1e-3)
    assert tail.expected_max(100) == pytest.approx(tail.quantile(100 / 101))
    for bad in ("lognormal:10", "fixed:0", "gamma:1:2", "lognormal:x:1"):
        with pytest.raises(ValueError, match=r"fixed:MEAN|not a number"):
            JobDuration.parse(bad)


def test_logs_cost_the_sampled_debug_lines_and_a_line_and_emf_document_a_batch() -> None:
    model = LogsAndMetrics(
        debug_bytes_per_execution=1000,
        bytes_per_summary_line=400,
        emf_bytes_fixed=250,
        bytes_per_metric_value=8,
        bytes_per_task_minute_line=200,
    )
    per_gb = 0.50 + 0.03

    usd, _ = model.lambda_usd_per_million(batch_size=100, other_invocations_per_execution=0.01)
    fargate, _ = model.fargate_usd_per_million(task_hours_per_million=10)

    # 1 % of runs sampled at DEBUG; a batch of 100: its platform lines (330), its INFO line
    # and its EMF document (250 + 8 a run) shared by its runs; the claimer's 930 a claim.
    per_execution = 0.01 * 1000 + (330 + 400 + 250 + 800) / 100 + 0.01 * 930
    assert usd == pytest.approx(per_execution * 1e6 / 1e9 * per_gb)
    # 10 task-hours send 600 PutMetricData requests ($0.01 per 1,000) and 600 INFO lines.
    assert fargate == pytest.approx((0.01 * 1000 * 1e6 + 600 * 200) / 1e9 * per_gb + 600 * 10 / 1e6)


def test_the_seeds_logs_and_metrics_cost_at_most_5_cents_a_million() -> None:
    """Issue 26's budget for logs and metrics, with the shipped batch of 100 on the worker
    function and with 88 task-hours an hour of Fargate workers at 5 M executions an hour."""
    model = LogsAndMetrics()

    on_lambda, detail = model.lambda_usd_per_million(100, 0.01)
    on_fargate, _ = model.fargate_usd_per_million(88 / 5)

    assert on_lambda <= 0.05 and on_fargate <= 0.05, (
        f"logs and metrics at most $0.05/M: ${on_lambda:.3f} ({detail}), ${on_fargate:.3f}"
    )


def test_a_fargate_task_hour_is_its_vcpu_and_memory_at_arm64_prices() -> None:
    assert fargate_task_hour_usd(0.5, 1.0) == pytest.approx(0.5 * 0.03238 + 0.00356)


def test_the_metered_breakdown_sums_a_reports_write_lines() -> None:
    report = {
        "DynamoDB writes: executions PutItem (claimer)": {"usd": 1.0},
        "DynamoDB writes: jobs UpdateItem (worker)": {"usd": 0.5},
        "Lambda worker": {"usd": 0.8},
    }
    assert metered_components(report) == {"DynamoDB writes": 1.5, "Lambda worker": 0.8}


def test_without_a_report_dynamodb_is_priced_from_the_units_given() -> None:
    defaults = default_components(write_units=8.0, read_units=4.0)

    assert defaults["DynamoDB writes"] == pytest.approx(5.0)
    assert defaults["DynamoDB reads"] == pytest.approx(0.5)
    # The claimer is not among them: the scenario prices it from its claims.
    assert "Lambda claimer" not in defaults
    assert sum(defaults.values()) == pytest.approx(5.5 + 1.38)
