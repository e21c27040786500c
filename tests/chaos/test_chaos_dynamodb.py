"""Scenario 1: DynamoDB throttling and transaction conflicts on every write path.

Every DynamoDB write of every function (claimer, worker, watchdog) is refused on a seeded 5 % of
its HTTP attempts, with `ProvisionedThroughputExceededException` or `ThrottlingException` (the
SDK retries those) or a transaction conflict (it does not: the function's invocation fails and
is retried, as Lambda would). Nothing may be lost, nothing dispatched or completed twice.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from takt.aws import AwsClients
from tests.chaos.conftest import Form, publish
from tests.chaos.sim import interval_jobs
from tests.support.faults import RandomWriteFaults
from tests.support.history import HistoryChecker, judge


def test_s1_throttling_and_conflicts_on_five_percent_of_writes_lose_nothing(
    make_sim: Any,
    fault_clients: AwsClients,
    checker: HistoryChecker,
    form: Form,
    seed: int,
    report_for: Any,
) -> None:
    sim = make_sim()
    rng = random.Random(seed)
    interval_jobs(sim, form.pick(3, 10), rng)
    with RandomWriteFaults(fault_clients.dynamodb, seed=seed, rate=0.05) as faults:
        sim.run(form.pick(40, 150))
        fault_end = sim.clock.now()
    sim.settle(45)

    report = judge(
        checker,
        report_for("s1_dynamodb_throttling"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
        fault_end=fault_end,
    )
    report.faults = {"writes": faults.calls, "refused": faults.refused, "errors": dict(sim.errors)}
    publish(report)

    assert sum(faults.refused.values()) > 0
    assert report.problems() == []
    assert report.occurrences > 0
    assert report.recovery_sec is not None and report.recovery_sec <= timedelta(minutes=1).seconds
