"""Scenario 10: a write that succeeds but whose response is lost, on claim, lease, heartbeat and
completion. The SDK retries it (the loss looks like a closed connection), so the retry meets the
function's own first write; retrying must be harmless: no second attempt, no false fenced
report, no second completion, every occurrence run once.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from takt.aws import AwsClients
from takt.config import Settings
from takt.models.records import ExecState
from tests.chaos.conftest import Form, publish
from tests.chaos.sim import Sim, interval_jobs
from tests.support.faults import LostResponses
from tests.support.history import HistoryChecker, judge

Match = Callable[[dict[str, Any]], bool]


def _names(params: dict[str, Any]) -> set[str]:
    return set(params.get("ExpressionAttributeNames", {}).values())


def _is_lease(params: dict[str, Any]) -> bool:
    return "started_at" in _names(params)


def _is_heartbeat(params: dict[str, Any]) -> bool:
    return "heartbeat_seq" in _names(params)


def _is_completion(params: dict[str, Any]) -> bool:
    return "finished_at" in _names(params)


POINTS = [
    pytest.param("PutItem", None, id="claim"),
    pytest.param("UpdateItem", _is_lease, id="lease"),
    pytest.param("UpdateItem", _is_heartbeat, id="heartbeat"),
    pytest.param("UpdateItem", _is_completion, id="completion"),
]


@pytest.mark.parametrize(("operation", "match"), POINTS)
def test_s10_a_lost_response_retried_by_the_sdk_is_harmless(
    settings: Settings,
    fault_clients: AwsClients,
    clock: Any,
    tmp_path: Any,
    checker: HistoryChecker,
    form: Form,
    seed: int,
    report_for: Any,
    request: pytest.FixtureRequest,
    operation: str,
    match: Match | None,
) -> None:
    point = request.node.callspec.id
    heartbeats = point == "heartbeat"
    if heartbeats:
        # Real heartbeats: every 50 ms of a call held open for 200 ms.
        settings = settings.model_copy(update={"heartbeat_sec": 0.05})
    sim = Sim.create(settings, fault_clients, clock, tmp_path)
    rng = random.Random(seed)
    interval_jobs(sim, form.pick(2, 5), rng, hold_sec=0.2 if heartbeats else 0.0)
    with LostResponses(
        fault_clients.dynamodb,
        operation,
        settings.executions_table,
        times=form.pick(2, 10),
        match=match,
    ) as lost:
        sim.run(form.pick(25, 60))
    sim.settle(20)

    report = judge(
        checker,
        report_for(f"s10_lost_response_{point}"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
    )
    executions = [r for records in checker_records(checker, sim) for r in records]
    report.faults = {"responses_lost": lost.lost, "errors": dict(sim.errors)}
    report.extra = {"max_attempt": max(r.attempt for r in executions)}
    publish(report)

    assert lost.lost > 0
    assert report.problems() == []
    assert {r.attempt for r in executions} == {1}, "no lease had to expire: no second attempt"
    assert {r.state for r in executions} == {ExecState.SUCCEEDED}
    assert {a.outcome for r in executions for a in r.attempts} == {"succeeded"}, (
        "a lost response retried by the SDK adds nothing to the attempt log"
    )
    outcomes = [checker.job_item(job.tenant_id, job.job_id) for job in sim.jobs]
    assert [(item or {}).get("last_outcome", {}).get("S") for item in outcomes] == [
        "succeeded"
    ] * len(sim.jobs)
    assert report.takt_fenced == 0  # takt's account: its own earlier write is not another's


def checker_records(checker: HistoryChecker, sim: Sim) -> list[list[Any]]:
    return [checker.executions(job.tenant_id, job.job_id) for job in sim.jobs]
