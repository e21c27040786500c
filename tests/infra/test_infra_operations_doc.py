"""docs/OPERATIONS.md has a runbook for every alarm the CDK app creates and explains every metric
the handlers publish, so an alarm never fires without a page that says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk import aws_cloudwatch as cloudwatch

from infra import metric_names
from infra.stateless import StatelessStack

OPERATIONS = (Path(__file__).resolve().parents[2] / "docs" / "OPERATIONS.md").read_text()


def test_every_alarm_has_a_runbook_heading(fargate_stateless: StatelessStack) -> None:
    # The observability construct's alarms notify people; the Fargate worker's scaling alarms
    # (elsewhere in the stack) only drive its task count.
    observability = fargate_stateless.node.find_child("Observability")
    alarms = {
        construct.node.id
        for construct in observability.node.find_all()
        if isinstance(construct, cloudwatch.Alarm)
    }
    headings = [line for line in OPERATIONS.splitlines() if line.startswith("### ")]

    assert alarms
    assert {a for a in alarms if not any(f"`{a}`" in h for h in headings)} == set()


@pytest.mark.parametrize("metric", metric_names.ALL, ids=lambda m: m.name)
def test_every_metric_is_explained_with_its_unit_and_emitter(
    metric: metric_names.MetricName,
) -> None:
    rows = [line for line in OPERATIONS.splitlines() if line.startswith(f"| `{metric.name}` |")]

    assert len(rows) == 1, metric.name
    assert f"| {metric.unit} | {metric.emitted_by} |" in rows[0]
