"""Every takt metric an alarm or a dashboard widget reads is declared, with the paths that serve it.

The walk goes over the synthesized templates (as shipped, and with the Fargate worker), reading
each alarm's metric and each widget's metrics from the dashboard body. A name that is not in
`infra/metric_names.py` fails here; a declared name that one of its paths does not emit fails in
tests/integration/worker/test_metric_paths.py, which runs each path on moto.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra import metric_names

DECLARED = {metric.name: metric for metric in metric_names.ALL}


def _alarm_metrics(template: Template) -> Iterator[tuple[str, str]]:
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        if "MetricName" in props:
            yield props["Namespace"], props["MetricName"]
        for query in props.get("Metrics", []):
            if "MetricStat" in query:
                metric = query["MetricStat"]["Metric"]
                yield metric["Namespace"], metric["MetricName"]


def _dashboard_body(template: Template) -> dict[str, Any]:
    (dashboard,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    # Tokens (a region, a function's name) only ever sit inside JSON strings of the body.
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    loaded: dict[str, Any] = json.loads(
        "".join(part if isinstance(part, str) else "TOKEN" for part in parts)
    )
    return loaded


def _widget_metrics(template: Template) -> Iterator[tuple[str, str]]:
    for widget in _dashboard_body(template)["widgets"]:
        previous: list[Any] = []
        for given in widget.get("properties", {}).get("metrics", []):
            # [namespace, name, dimension, value, ..., {options}], "." repeating the row above's
            # field; a row holding only {options} is a math expression, whose inputs are rows.
            if isinstance(given[0], dict):
                continue
            row = [previous[i] if field == "." else field for i, field in enumerate(given)]
            previous = row
            yield row[0], row[1]


def _takt_names(template: Template) -> set[str]:
    read = [*_alarm_metrics(template), *_widget_metrics(template)]
    return {name for namespace, name in read if namespace == metric_names.NAMESPACE}


@pytest.mark.parametrize("template_name", ["stateless_template", "fargate_template"])
def test_every_takt_metric_read_by_alarms_and_widgets_is_declared(
    template_name: str, request: pytest.FixtureRequest
) -> None:
    template: Template = request.getfixturevalue(template_name)

    read = _takt_names(template)

    assert "ScheduleLag" in read and "DispatchLag" in read
    assert read - set(DECLARED) == set()


def test_the_schedule_lag_alarm_reads_a_metric_the_fargate_worker_emits(
    fargate_template: Template,
) -> None:
    alarmed = {name for namespace, name in _alarm_metrics(fargate_template)}

    assert "ScheduleLag" in alarmed
    assert "takt worker" in DECLARED["ScheduleLag"].paths


def test_dispatch_metrics_are_served_in_both_claimer_modes() -> None:
    for name in ("DispatchLag", "Dispatched", "Skipped"):
        assert set(DECLARED[name].paths) == set(metric_names.DISPATCH_PATHS), name
