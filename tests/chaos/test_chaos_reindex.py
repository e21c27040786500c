"""Scenario 18, third form: the indexer down for longer than the stream's retention.

Jobs are created through the API while the indexer never reads the stream (its records expire
before it is back): only the reconciler, which the watchdog runs on each invocation, can give
them their due items. Every occurrence (counted on the anchor by the oracle) must still reach its
target, the first ones late by about the reconciler's grace.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.aws import AwsClients
from takt.clock import ManualClock
from takt.wiring import Services
from tests.chaos.conftest import Form, publish
from tests.chaos.sim import Sim
from tests.support.env import fresh_settings
from tests.support.history import HistoryChecker, judge
from tests.support.jobs import TENANT

REINDEX_GRACE_SEC = 20.0


def test_s18_an_indexer_down_past_the_streams_retention_loses_no_occurrence(
    moto_endpoint: str,
    clients: AwsClients,
    fault_clients: AwsClients,
    clock: ManualClock,
    tmp_path: Path,
    form: Form,
    seed: int,
    report_for: Any,
) -> None:
    """Jobs created through the API while the indexer is down for longer than the stream keeps
    its records (it never reads them): only the reconciler, run by each watchdog sweep, can put
    their due items. Every occurrence must still reach its target, late by about the grace."""
    rng = random.Random(seed)
    settings = fresh_settings(
        clients,
        moto_endpoint,
        due_shards=1,
        open_shards=1,
        lease_sec=10.0,
        heartbeat_sec=60.0,
        pending_resend_after_sec=15.0,
        reindex_grace_sec=REINDEX_GRACE_SEC,
    )
    sim = Sim.create(settings, fault_clients, clock, tmp_path)
    api = JobService(sim.svc.api)
    reconciler = sim.svc.reconciler
    ticker = sim.ticker()
    created = form.pick(4, 12)
    for second in range(form.pick(120, 300)):
        if second % 10 == 0 and len(sim.jobs) < created:
            body = JobCreate(
                interval=f"{rng.randint(5, 15)}s",
                target="handler:chaos.effect",
                payload={"log": str(sim.log.path), "fail": False},
                catchup="all",
                catchup_window="1h",
            )
            job, _ = api.create(TENANT, body, None)
            sim.jobs.append(job)
        if second % sim.sweep_every == 0:
            reconciler.run(sim.clock.now())  # the watchdog runs it first, each invocation
        sim.step(ticker)
    sim.settle(10)

    checker = HistoryChecker(Services(settings=settings, clients=clients, clock=clock))
    report = judge(
        checker,
        report_for("s18_indexer_down_past_retention"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
    )
    report.faults = {"indexer": "down throughout", "reindex_grace_sec": REINDEX_GRACE_SEC}
    publish(report)

    assert report.problems() == []
    assert report.occurrences >= created
    assert report.lateness_sec["max"] > 0  # each first run waited for the reconciler
