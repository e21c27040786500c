"""The per-second drivers as deployed: overlapping invocations, sized so that neither their planned
overlap nor a repeated start is throttled or ends as an error (both would page)."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.driver import (
    DRIVER_CONCURRENCY,
    DRIVER_LIFE_SEC,
    DRIVER_TIMEOUT_SEC,
    DRIVERS,
)
from infra.stateless import StatelessStack
from takt.dispatch.driver import STOP_BEFORE_END_SEC
from tests.infra.conftest import LogicalId

RULE_PERIOD_SEC = 60


@pytest.fixture(scope="module")
def resources(stateless_template: Template) -> dict[str, Any]:
    found: dict[str, Any] = stateless_template.to_json()["Resources"]
    return found


def _rules_for(resources: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    return [
        resource["Properties"]
        for resource in resources.values()
        if resource["Type"] == "AWS::Events::Rule"
        and any(
            target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
            for target in resource["Properties"]["Targets"]
        )
    ]


def test_one_rule_starts_one_driver_a_minute(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    function_id = logical_id(stateless, stateless.functions.scheduler)

    (rule,) = _rules_for(resources, function_id)

    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert len(rule["Targets"]) == 1
    assert rule["Targets"][0]["RetryPolicy"]["MaximumEventAgeInSeconds"] == RULE_PERIOD_SEC


def test_at_every_instant_two_drivers_run_and_each_start_overlaps_them(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    """Started a minute apart and living DRIVERS minutes and HANDOVER_SEC, DRIVERS of them are
    alive at any instant (DRIVERS + 1 just after each start), so one dying leaves another, and
    no start or end is ever the only driver between two seconds."""
    function = resources[logical_id(stateless, stateless.functions.scheduler)]["Properties"]
    starts = range(0, 10 * RULE_PERIOD_SEC, RULE_PERIOD_SEC)

    alive = [
        sum(1 for start in starts if start <= t < start + DRIVER_LIFE_SEC)
        for t in range(DRIVERS * RULE_PERIOD_SEC, 9 * RULE_PERIOD_SEC)
    ]

    assert DRIVERS >= 2
    assert min(alive) == DRIVERS
    assert max(alive) == DRIVERS + 1
    # The handler stops STOP_BEFORE_END_SEC before its timeout: a driver ends, never times out.
    assert function["Timeout"] == DRIVER_TIMEOUT_SEC == DRIVER_LIFE_SEC + STOP_BEFORE_END_SEC
    assert function["Timeout"] <= 900  # Lambda's limit


def test_the_planned_overlap_and_a_repeated_start_fit_the_reserved_concurrency(
    stateless: StatelessStack, resources: dict[str, Any], logical_id: LogicalId
) -> None:
    """`SchedulerThrottles` pages on any throttle: the drivers of a hand-over and one more start
    (a second delivery of the rule's event, which returns at once) must all be admitted."""
    function = resources[logical_id(stateless, stateless.functions.scheduler)]["Properties"]

    assert function["ReservedConcurrentExecutions"] == DRIVER_CONCURRENCY >= DRIVERS + 1 + 1
