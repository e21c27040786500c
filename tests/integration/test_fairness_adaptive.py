"""Drain-sized fairness on the real dispatch path (claimer, lanes on moto's SQS): a backlogged
tenant alone is claimed faster while the lanes keep up and falls back to the floor when they do
not; a quiet tenant's messages keep the fast lane while a flood beyond the headroom overflows;
and none of it writes to the tenants table."""

from __future__ import annotations

from datetime import datetime, timedelta

from takt.clock import ManualClock
from takt.dispatch.claimer import FAIR_READ_PAGE, Claimer, ClaimerSettings
from takt.fairness.adaptive import LaneGauge
from takt.store.due import minute_of
from takt.wiring import Services
from tests.support.env import ServicesFactory
from tests.support.jobs import job_id_in_shard, make_job, store_job
from tests.support.lanes import drain

FAIR = {"claim_max_items": 4, "fair_queue_sec": 0.5, "due_shards": 1, "claimer_threads": 1}


class Ticks:
    """A monotonic clock for the gauge that the test moves a second at a time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def flood(svc: Services, clock: ManualClock, tenant: str, count: int, due: datetime) -> None:
    for _ in range(count):
        job_id = job_id_in_shard(tenant, 0, svc.settings.due_shards)
        store_job(
            svc,
            make_job(now=clock.now(), next_run_time=due, tenant_id=tenant, job_id=job_id),
            clock.now(),
        )


def claimer_with_gauge(svc: Services, ticks: Ticks) -> Claimer:
    gauge = LaneGauge(svc.clients.sqs, svc.settings.lane_urls, monotonic=ticks)
    return Claimer(
        ClaimerSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes, gauge=gauge
    )


def test_a_lone_backlog_is_claimed_faster_while_the_lanes_keep_up_and_at_the_floor_when_not(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(**FAIR)
    flood(svc, clock, "flood", 4 * FAIR_READ_PAGE, clock.now() - timedelta(seconds=1))
    ticks = Ticks()
    claimer = claimer_with_gauge(svc, ticks)

    kept_up = []
    for _ in range(3):
        claimer.claim(minute_of(clock.now()), 0, clock.now())
        kept_up.append(len(drain(svc, "default")) + len(drain(svc, "low")))
        ticks.now += 1
        clock.advance(1)
    backed_up = []
    for _ in range(3):
        backed_up.append(claimer.claim(minute_of(clock.now()), 0, clock.now()).dispatched)
        ticks.now += 1
        clock.advance(1)

    # Empty lanes: the workers wait, so each sample doubles the claim, from the floor (4).
    assert kept_up == [8, 16, 32]
    assert backed_up[-1] == 4  # the lanes hold more than their drain: back to the floor
    assert svc.clients.dynamodb.scan(TableName=svc.settings.tenants_table)["Items"] == []


def test_a_quiet_tenant_keeps_the_fast_lane_and_the_flood_beyond_the_headroom_overflows(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(**FAIR)
    due = clock.now()
    flood(svc, clock, "flood", FAIR_READ_PAGE + 20, due - timedelta(seconds=5))
    flood(svc, clock, "quiet", 3, due)
    claimer = claimer_with_gauge(svc, Ticks())

    claimer.claim(minute_of(clock.now()), 0, clock.now())

    default = [m.tenant_id for m in drain(svc, "default")]
    low = [m.tenant_id for m in drain(svc, "low")]
    # Empty lanes double the floor (8 of the flood's); empty fast lanes take the floor (4): the
    # quiet tenant's 3 first, then one of the flood's; the flood's 7 others overflow.
    assert sorted(default) == ["flood", "quiet", "quiet", "quiet"]
    assert low == ["flood"] * 7
