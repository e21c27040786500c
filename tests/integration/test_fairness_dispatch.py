"""Weighted fair dispatch on the real dispatch path (claimer, lane sender, moto's SQS): a
flooding tenant's messages beyond its share go to the overflow lane, and a quiet tenant's
messages reach their own lane with at most the flood's burst ahead of them."""

from __future__ import annotations

from datetime import datetime, timedelta

from takt.clock import ManualClock
from takt.config import TenantLimits
from takt.dispatch.claimer import FAIR_READ_PAGE, Claimer, ClaimerSettings
from takt.models.lanes import LaneMessage
from takt.store.due import minute_of
from takt.wiring import Services
from tests.support.env import ServicesFactory
from tests.support.jobs import job_id_in_shard, make_job, store_job
from tests.support.lanes import drain

PER_SEC = 5.0
BURST_SEC = 2.0  # a tenant of weight 1 sends 10 at once to its own lane
# One claim thread: the claim's sends then take the buckets one after another. moto's server
# does not make concurrent conditional writes to one item strictly atomic (DESIGN, known
# facts), and these tests are about the shares, not that race.
SEQUENTIAL = {"claimer_threads": 1}


def _flood(svc: Services, clock: ManualClock, tenant: str, count: int, due: datetime) -> None:
    for _ in range(count):
        job_id = job_id_in_shard(tenant, 0, svc.settings.due_shards)
        store_job(
            svc,
            make_job(now=clock.now(), next_run_time=due, tenant_id=tenant, job_id=job_id),
            clock.now(),
        )


def _claim(svc: Services, clock: ManualClock) -> None:
    claimer = Claimer(
        ClaimerSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes
    )
    claimer.claim(minute_of(clock.now()), 0, clock.now())


def _tenants(messages: list[LaneMessage]) -> list[str]:
    return [m.tenant_id for m in messages]


def test_a_flood_beyond_its_share_overflows_and_a_quiet_tenant_keeps_its_lane(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(fair_dispatch_per_sec=PER_SEC, fair_dispatch_burst_sec=BURST_SEC, **SEQUENTIAL)
    due = clock.now()
    _flood(svc, clock, "flood", 30, due - timedelta(seconds=1))  # older: first in due order
    _flood(svc, clock, "quiet", 3, due)

    _claim(svc, clock)

    default = _tenants(drain(svc, "default"))
    low = _tenants(drain(svc, "low"))
    assert default.count("quiet") == 3
    assert default.count("flood") == 10  # its burst
    assert low == ["flood"] * 20
    assert "quiet" not in low


def test_a_tenants_share_comes_back_at_its_rate_times_its_weight(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(
        fair_dispatch_per_sec=PER_SEC,
        fair_dispatch_burst_sec=BURST_SEC,
        tenant_limit_overrides={"heavy": TenantLimits(weight=2)},
        **SEQUENTIAL,
    )
    _flood(svc, clock, "heavy", 20, clock.now())
    _claim(svc, clock)
    assert len(drain(svc, "default")) == 20  # weight 2: a burst of 20

    clock.advance(1)
    _flood(svc, clock, "heavy", 20, clock.now())
    _claim(svc, clock)
    assert len(drain(svc, "default")) == 10  # one second at 2 x 5 a second
    assert len(drain(svc, "low")) == 10


def test_with_fair_dispatch_off_everything_goes_to_its_own_lane_and_nothing_is_written(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc()
    _flood(svc, clock, "flood", 15, clock.now())
    _claim(svc, clock)
    assert len(drain(svc, "default")) == 15
    items = svc.clients.dynamodb.scan(TableName=svc.settings.tenants_table)["Items"]
    assert items == []


def test_a_bounded_claim_takes_a_quiet_tenant_whole_beside_its_bound_of_the_floods_backlog(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(claim_max_items=8)
    due = clock.now()
    _flood(svc, clock, "flood", FAIR_READ_PAGE + 12, due - timedelta(seconds=5))
    _flood(svc, clock, "quiet", 2, due)

    _claim(svc, clock)

    # The flood's run is skipped after one page: the quiet tenant's items, behind it, are read
    # and taken whole; the flood takes the claim's bound.
    assert sorted(_tenants(drain(svc, "default"))) == ["flood"] * 8 + ["quiet"] * 2
    claimed = []
    for _ in range(3):
        clock.advance(1)
        _claim(svc, clock)
        claimed.append(len(drain(svc, "default")))
    # 8 more while the flood fills a page; what is left then fits in one, is read whole and is
    # no longer a backlog.
    assert claimed == [8, FAIR_READ_PAGE - 4, 0]


def test_a_quiet_tenants_fresh_item_behind_a_backlog_spread_over_instants_is_claimed_at_once(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(claim_max_items=4, claim_read_pages=3)
    start = clock.now() - timedelta(seconds=30)
    for ms in range(3 * FAIR_READ_PAGE):
        _flood(svc, clock, "flood", 1, start + timedelta(milliseconds=10 * ms))
    _flood(svc, clock, "quiet", 1, clock.now())

    _claim(svc, clock)

    # Two pages of the oldest find nothing to skip (one item an instant); the third query reads
    # the newest items, the quiet tenant's among them, which it takes beside the flood's bound.
    assert sorted(_tenants(drain(svc, "default"))) == ["flood"] * 4 + ["quiet"]


def test_messages_carry_their_tenant_as_the_fair_queue_group(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc()
    _flood(svc, clock, "quiet", 1, clock.now())
    _claim(svc, clock)
    resp = svc.clients.sqs.receive_message(
        QueueUrl=svc.settings.lane_url("default"),
        MessageSystemAttributeNames=["MessageGroupId"],
    )
    assert [m["Attributes"]["MessageGroupId"] for m in resp["Messages"]] == ["quiet"]
