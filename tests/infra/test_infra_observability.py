"""The dashboard shows every metric takt publishes; the alarms watch what DESIGN.md promises and
notify the alarm topic; docs/DEPLOY.md names the metrics the handlers must emit."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra import metric_names
from infra.functions import SPECS
from infra.stateful import StatefulStack
from infra.stateless import StatelessStack
from takt.config import LANES
from takt.resources import TABLES

LogicalId = Callable[[Stack, IConstruct], str]
Resolve = Callable[[Any], Any]
DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md"


@pytest.fixture(scope="module")
def alarms(stateless_template: Template, resolve: Resolve) -> list[dict[str, Any]]:
    found = stateless_template.find_resources("AWS::CloudWatch::Alarm")
    return [resolve(alarm["Properties"]) for alarm in found.values()]


def _metric_names(alarm: dict[str, Any]) -> set[str]:
    if "MetricName" in alarm:
        return {alarm["MetricName"]}
    return {
        query["MetricStat"]["Metric"]["MetricName"]
        for query in alarm["Metrics"]
        if "MetricStat" in query
    }


def _dimension(alarm: dict[str, Any], name: str) -> Any:
    return next(d["Value"] for d in alarm.get("Dimensions", []) if d["Name"] == name)


def test_every_alarm_notifies_the_topic_when_it_fires_and_clears(
    alarms: list[dict[str, Any]], stateful: StatefulStack, logical_id: LogicalId
) -> None:
    topic = {"Ref": logical_id(stateful, stateful.alarm_topic)}

    assert alarms
    assert all(alarm["AlarmActions"] == [topic] for alarm in alarms)
    assert all(alarm["OKActions"] == [topic] for alarm in alarms)


def test_p99_schedule_lag_above_5_s_for_3_of_5_minutes_alarms(
    alarms: list[dict[str, Any]],
) -> None:
    (lag,) = [a for a in alarms if _metric_names(a) == {metric_names.SCHEDULE_LAG.name}]
    (query,) = lag["Metrics"]

    assert query["MetricStat"]["Stat"] == "p99"
    assert query["MetricStat"]["Period"] == 60
    assert query["MetricStat"]["Metric"]["Namespace"] == metric_names.NAMESPACE
    assert query["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": metric_names.SERVICE_DIMENSION, "Value": metric_names.SERVICE}
    ]
    assert lag["Threshold"] == 5000
    assert (lag["EvaluationPeriods"], lag["DatapointsToAlarm"]) == (5, 3)
    assert lag["ComparisonOperator"] == "GreaterThanThreshold"


@pytest.mark.parametrize("lane", LANES)
def test_any_message_in_a_dead_letter_queue_alarms(
    lane: str, alarms: list[dict[str, Any]], stateful: StatefulStack, logical_id: LogicalId
) -> None:
    dlq_id = logical_id(stateful, stateful.lanes.lanes[lane].dlq)
    matching = [
        a
        for a in alarms
        if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"
        and _dimension(a, "QueueName") == {"Fn::GetAtt": [dlq_id, "QueueName"]}
    ]

    assert len(matching) == 1
    assert (matching[0]["Threshold"], matching[0]["ComparisonOperator"]) == (
        0,
        "GreaterThanThreshold",
    )


@pytest.mark.parametrize("metric", ["Errors", "Throttles"])
def test_every_function_alarms_on_errors_and_throttles(
    metric: str,
    alarms: list[dict[str, Any]],
    stateless: StatelessStack,
    logical_id: LogicalId,
) -> None:
    watched = {
        json.dumps(_dimension(a, "FunctionName"))
        for a in alarms
        if a.get("MetricName") == metric and a.get("Namespace") == "AWS/Lambda"
    }
    functions = {
        json.dumps({"Ref": logical_id(stateless, stateless.functions.functions[spec.name])})
        for spec in SPECS
    }

    assert watched == functions


def test_watchdog_recoveries_above_the_threshold_alarm(
    alarms: list[dict[str, Any]], cdk_json_context: dict[str, Any]
) -> None:
    recoveries = {metric_names.LEASE_EXPIRED.name, metric_names.PENDING_RESENT.name}
    (alarm,) = [a for a in alarms if _metric_names(a) == recoveries]

    assert alarm["Threshold"] == cdk_json_context["recoveryAlarmThreshold"]


def test_each_table_has_its_own_throttle_alarm(
    alarms: list[dict[str, Any]], stateful: StatefulStack, logical_id: LogicalId
) -> None:
    throttle_alarms = [
        a for a in alarms if _metric_names(a) == {"ReadThrottleEvents", "WriteThrottleEvents"}
    ]
    tables = {
        json.dumps({"Ref": logical_id(stateful, stateful.tables.table(spec))}) for spec in TABLES
    }
    watched = [
        {
            json.dumps(dimension["Value"])
            for query in alarm["Metrics"]
            if "MetricStat" in query
            for dimension in query["MetricStat"]["Metric"]["Dimensions"]
        }
        for alarm in throttle_alarms
    ]

    assert all(len(table) == 1 for table in watched)
    assert set().union(*watched) == tables
    assert len(watched) == len(tables)


def test_no_alarm_grows_with_the_tables_toward_cloudwatchs_limit_of_10_metrics(
    fargate_template: Template,
) -> None:
    """An alarm per table, not one over all: a sixth table must not fail the deploy.

    The Fargate worker's scaling alarms read up to three metrics per lane it serves, and the
    lanes are fixed (takt.config.LANES), so they stay under the limit whatever is added.
    """
    read = {
        logical_id: sum("MetricStat" in query for query in alarm["Properties"].get("Metrics", []))
        for logical_id, alarm in fargate_template.find_resources("AWS::CloudWatch::Alarm").items()
    }
    takts = [count for logical_id, count in read.items() if logical_id.startswith("Observability")]
    scaling = [count for logical_id, count in read.items() if "TaskCountTarget" in logical_id]

    assert len(takts) > len(TABLES) and max(takts) <= 2
    assert scaling and max(scaling) <= 3 * len(LANES) < 10


def test_a_scheduler_that_stops_running_alarms(
    alarms: list[dict[str, Any]], stateless: StatelessStack, logical_id: LogicalId
) -> None:
    scheduler = {"Ref": logical_id(stateless, stateless.functions.scheduler)}
    (alarm,) = [
        a
        for a in alarms
        if a.get("MetricName") == "Invocations" and _dimension(a, "FunctionName") == scheduler
    ]

    assert alarm["ComparisonOperator"] == "LessThanThreshold"
    assert alarm["TreatMissingData"] == "breaching"


def test_dashboard_shows_every_takt_metric_and_the_lane_gauges(
    stateless_template: Template, fargate_template: Template
) -> None:
    """Every metric is on the dashboard; the Fargate worker's own (its slots, the scale-ahead
    counts) only where there is a Fargate worker to show them for."""
    (dashboard,) = stateless_template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    (with_fargate,) = fargate_template.find_resources("AWS::CloudWatch::Dashboard").values()
    fargate_body = json.dumps(with_fargate["Properties"]["DashboardBody"])
    fargate_only = {metric_names.WORKER_SLOTS_BUSY, metric_names.DUE_AHEAD}
    fargate_only.add(metric_names.WORKER_TASKS_AHEAD)

    for metric in metric_names.ALL:
        assert f'\\"{metric.name}\\"' in fargate_body, metric.name
        assert (f'\\"{metric.name}\\"' in body) is (metric not in fargate_only), metric.name
    for gauge in ("ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"):
        assert gauge in body
    for lambda_metric in ("Errors", "Throttles", "Duration"):
        assert lambda_metric in body


@pytest.mark.parametrize("metric", metric_names.ALL, ids=lambda metric: metric.name)
def test_deploy_doc_lists_the_metric_with_its_unit_and_emitter(
    metric: metric_names.MetricName,
) -> None:
    rows = [line for line in DEPLOY_DOC.read_text().splitlines() if f"`{metric.name}`" in line]

    assert any(metric.unit in row and metric.emitted_by in row for row in rows), metric.name
