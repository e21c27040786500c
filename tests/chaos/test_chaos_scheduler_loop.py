"""Scenario 20: the scheduler loop dying mid-minute.

The ticker is a fresh invocation every second (a Lambda's), over four due shards. Across a
minute boundary it dies at random between its steps: reading or moving the watermark, checking a
bucket empty, and between the fan-out's claims of one (minute, shard) and the next, so a second's
sweep stops with some shards claimed and others not. Then, from second 25 to 45 of the next
minute, it does not run at all (a driver down), and comes back.

Every interval job's occurrences (counted on its anchor by the oracle) must reach their target,
once per occurrence, however late; lateness and recovery from the end of the outage are reported.
"""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from takt.aws import AwsClients
from takt.clock import ManualClock
from takt.dispatch.ticker import InlineFanout, Ticker
from takt.wiring import Services
from tests.chaos.conftest import Form, publish
from tests.chaos.sim import Sim, interval_jobs
from tests.support.env import fresh_settings
from tests.support.faults import crash_randomly
from tests.support.history import HistoryChecker, judge

SHARDS = 4
CRASH_RATE = 0.15
DOWN = (25, 45)  # seconds of the second minute with no ticker at all


@pytest.fixture
def loop_sim(
    moto_endpoint: str,
    clients: AwsClients,
    fault_clients: AwsClients,
    clock: ManualClock,
    tmp_path: Path,
) -> Sim:
    settings = fresh_settings(
        clients,
        moto_endpoint,
        due_shards=SHARDS,
        open_shards=1,
        lease_sec=10.0,
        heartbeat_sec=60.0,
        pending_resend_after_sec=15.0,
        due_grace_sec=5.0,
    )
    return Sim.create(settings, fault_clients, clock, tmp_path)


def test_s20_the_scheduler_loop_dying_mid_minute_loses_and_doubles_nothing(
    loop_sim: Sim, clients: AwsClients, form: Form, seed: int, report_for: Any
) -> None:
    sim = loop_sim
    rng = random.Random(seed)
    checker = HistoryChecker(Services(settings=sim.svc.settings, clients=clients, clock=sim.clock))
    interval_jobs(sim, form.pick(6, 16), rng)
    settings = sim.svc.settings
    start = sim.clock.now()
    minute = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    crashing = {"open": True}
    due = crash_randomly(
        sim.svc.due,
        ("watermark", "advance_watermark", "bucket_empty"),
        rng,
        rate=CRASH_RATE,
        active=lambda: crashing["open"],
    )
    claimer = crash_randomly(
        sim.claimer, ("claim",), rng, rate=CRASH_RATE, active=lambda: crashing["open"]
    )
    down_from, down_to = minute + timedelta(seconds=DOWN[0]), minute + timedelta(seconds=DOWN[1])
    end = minute + timedelta(seconds=form.pick(90, 240))
    ticks = skipped = 0
    while sim.clock.now() < end:
        now = sim.clock.now()
        crashing["open"] = now < down_to
        if down_from <= now < down_to:
            skipped += 1
            sim.clock.advance(1)
            continue
        ticker = Ticker(
            due,
            InlineFanout(claimer.claim, 1),
            settings.max_catchup_buckets,
            timedelta(seconds=settings.dispatch_ahead_sec),
        )
        sim.step(ticker)
        ticks += 1
    sim.settle(15)

    report = judge(
        checker,
        report_for("s20_scheduler_loop_dies_mid_minute"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
        fault_end=down_to,
    )
    crashes = {**getattr(due, "crashes", {}), **getattr(claimer, "crashes", {})}
    report.faults = {
        "due_shards": SHARDS,
        "crashes": crashes,
        "ticks": ticks,
        "seconds_without_a_ticker": skipped,
        "ticks_died": sum(v for k, v in sim.errors.items() if k.startswith("tick")),
    }
    publish(report)

    assert report.problems() == []
    assert sum(crashes.values()) > 0
    assert skipped == DOWN[1] - DOWN[0]
