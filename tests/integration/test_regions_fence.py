"""The region fence in the claim path, on moto (issue 27): a multi-region claim stamps its epoch
on what it writes and sends, a fenced region writes nothing, an old region cannot advance a job
a later epoch advanced, a take-over fences the old holder through the lease table's conditions,
and with one region nothing of it is read, written or stamped."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.claimer.handler import handler as claimer_handler
from takt.aws import AwsClients
from takt.clock import ManualClock
from takt.models.ids import format_time
from takt.models.regions import Fenced, Unfenced
from takt.regions.fence import RegionFence
from takt.regions.lease import LeaseTimes
from takt.store.due import minute_of, shard_of
from takt.wiring import Services, install
from takt_cli.local.events import LocalContext
from tests.support.env import ServicesFactory
from tests.support.jobs import TENANT, make_job, store_job
from tests.support.regions import ACTIONS, RATES, both_acting, fresh_lease_table, lease_store

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
EAST = "us-east-1"
WEST = "us-east-2"
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


@pytest.fixture
def requests(clients: AwsClients) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Every DynamoDB and SQS request the shared data clients make, by operation name."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        seen.append((model.name, params))

    for client in (clients.dynamodb, clients.sqs):
        client.meta.events.register("provide-client-params", record)
    yield seen
    for client in (clients.dynamodb, clients.sqs):
        client.meta.events.unregister("provide-client-params", record)


def _regional(make_svc: ServicesFactory, clients: AwsClients, region: str) -> Services:
    return make_svc(
        regions=(EAST, WEST), region=region, region_lease_table=fresh_lease_table(clients)
    )


def _due_job(svc: Services, clock: ManualClock) -> tuple[str, int]:
    job = store_job(svc, make_job(now=clock.now(), next_run_time=NOON), clock.now())
    return job.job_id, shard_of(TENANT, job.job_id, svc.due.shards)


def _claim(svc: Services, shard: int) -> Any:
    return svc.claimer.claim(minute_of(NOON), shard, NOON)


def test_a_single_region_claim_reads_writes_and_stamps_nothing_of_the_fence(
    svc: Services, clock: ManualClock, requests: list[tuple[str, dict[str, Any]]]
) -> None:
    _, shard = _due_job(svc, clock)
    requests.clear()

    result = _claim(svc, shard)

    sent = [p for name, p in requests if name == "SendMessageBatch"]
    assert result.dispatched == 1
    assert isinstance(svc.fence, Unfenced), "no TAKT_REGIONS: the fence is off"
    assert "region_epoch" not in repr(requests), (
        "single region: a claim writes exactly what it wrote before (no region_epoch anywhere)"
    )
    assert all("MessageAttributes" not in e for p in sent for e in p["Entries"]), (
        "single region: a lane message carries no region attribute"
    )


def test_a_multi_region_claim_stamps_its_epoch_on_executions_advances_and_messages(
    make_svc: ServicesFactory, clients: AwsClients, clock: ManualClock, requests: list[Any]
) -> None:
    svc = _regional(make_svc, clients, EAST)
    job_id, shard = _due_job(svc, clock)

    result = _claim(svc, shard)

    executions = svc.clients.dynamodb.scan(TableName=svc.settings.executions_table)["Items"]
    job = svc.clients.dynamodb.get_item(
        TableName=svc.settings.jobs_table,
        Key={"tenant_id": {"S": TENANT}, "job_id": {"S": job_id}},
    )["Item"]
    sent = [e for name, p in requests if name == "SendMessageBatch" for e in p["Entries"]]
    assert result.dispatched == 1
    assert [e.get("region_epoch") for e in executions] == [{"N": "1"}], (
        "an execution created by a claim carries the epoch the region acted at"
    )
    assert job["region_epoch"] == {"N": "1"}, "the job's advance sets its region_epoch"
    assert [e["MessageAttributes"]["region_epoch"]["StringValue"] for e in sent] == ["1"], (
        "each lane message carries the epoch as a message attribute"
    )


def test_a_fenced_region_refuses_a_claim_before_any_write(
    make_svc: ServicesFactory, clients: AwsClients, clock: ManualClock, requests: list[Any]
) -> None:
    svc = _regional(make_svc, clients, WEST)
    lease_store(clients, svc.settings.region_lease_table).create(EAST)
    _, shard = _due_job(svc, clock)
    requests.clear()

    with pytest.raises(Fenced):
        _claim(svc, shard)

    assert [name for name, _ in requests if name in WRITES | {"SendMessageBatch"}] == [], (
        "a region that does not hold the region lease claims nothing: no write, no message"
    )


# A fenced claim publishes no metric, which Powertools warns about.
@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_a_fenced_claimer_function_answers_fenced_and_writes_nothing(
    make_svc: ServicesFactory, clients: AwsClients, clock: ManualClock, requests: list[Any]
) -> None:
    svc = _regional(make_svc, clients, WEST)
    lease_store(clients, svc.settings.region_lease_table).create(EAST)
    _, shard = _due_job(svc, clock)
    requests.clear()
    install(svc)
    try:
        context = LocalContext(function_name="takt-claimer", timeout_ms=60_000)
        answer = claimer_handler(
            {"minute": format_time(minute_of(NOON)), "shard": shard}, cast(LambdaContext, context)
        )
    finally:
        install(None)

    assert answer["fenced"] is True, "a fenced claim is answered, not raised (no Lambda retry)"
    assert [name for name, _ in requests if name in WRITES | {"SendMessageBatch"}] == [], (
        "the claimer function of a region without the region lease writes nothing"
    )


@pytest.mark.parametrize(("after_sec", "claims"), [(14.9, True), (15.0, False)])
def test_a_region_whose_proof_is_older_than_lease_minus_margin_refuses_to_claim(
    make_svc: ServicesFactory,
    clients: AwsClients,
    clock: ManualClock,
    requests: list[Any],
    after_sec: float,
    claims: bool,
) -> None:
    """The holder proves the lease at noon, then loses the lease table (every renewal fails):
    on its monotonic clock it may claim until lease - margin (20 - 5 s) after that proof."""
    svc = _regional(make_svc, clients, EAST)
    _, shard = _due_job(svc, clock)
    assert svc.fence.epoch() == 1
    clients.dynamodb.delete_table(TableName=svc.settings.region_lease_table)
    clock.advance(after_sec)
    requests.clear()

    try:
        dispatched = _claim(svc, shard).dispatched
    except Fenced:
        dispatched = 0

    writes = [name for name, _ in requests if name in WRITES | {"SendMessageBatch"}]
    assert (dispatched == 1, bool(writes)) == (claims, claims), (
        f"{after_sec} s after its last proof a region may claim only if that is under "
        "lease - margin (15 s): then it dispatches, else it writes nothing"
    )


def test_an_old_region_cannot_advance_a_job_a_later_epoch_advanced(
    make_svc: ServicesFactory, clients: AwsClients, clock: ManualClock
) -> None:
    svc = _regional(make_svc, clients, EAST)
    job_id, shard = _due_job(svc, clock)
    # The new holder's advance at epoch 2, replicated to this region (MREC), while this
    # region's own proof of epoch 1 is still young.
    key = {"tenant_id": {"S": TENANT}, "job_id": {"S": job_id}}
    assert svc.fence.epoch() == 1
    svc.clients.dynamodb.update_item(
        TableName=svc.settings.jobs_table,
        Key=key,
        UpdateExpression="SET region_epoch = :e",
        ExpressionAttributeValues={":e": {"N": "2"}},
    )

    with pytest.raises(Fenced):
        _claim(svc, shard)

    job = svc.jobs.get(TENANT, job_id)
    assert job.next_run_time == NOON, (
        "an advance at an epoch behind the job's region_epoch is refused: the job stays put"
    )


def test_an_advance_behind_the_job_s_region_epoch_is_refused(
    svc: Services, clock: ManualClock
) -> None:
    job = store_job(svc, make_job(now=clock.now(), next_run_time=NOON), clock.now())
    later = NOON + timedelta(minutes=1)
    ahead = svc.jobs.advance(job, NOON, later, region_epoch=2)
    moved = svc.jobs.get(TENANT, job.job_id)
    back = svc.jobs.advance(moved, later, later + timedelta(minutes=1), region_epoch=1)

    assert (ahead.applied, back.applied, back.region_epoch) == (True, False, 2), (
        "an advance at an epoch behind the job's region_epoch is refused, and says which"
    )


def test_a_region_advances_a_job_again_at_the_epoch_it_last_advanced_it_at(
    svc: Services, clock: ManualClock
) -> None:
    """The fence refuses only a later epoch's job: the holder advances its jobs occurrence after
    occurrence at one epoch, and at the next epoch after a take-over."""
    job = store_job(svc, make_job(now=clock.now(), next_run_time=NOON), clock.now())
    later = NOON + timedelta(minutes=1)
    first = svc.jobs.advance(job, NOON, later, region_epoch=2)
    again = svc.jobs.advance(
        svc.jobs.get(TENANT, job.job_id), later, later + timedelta(minutes=1), region_epoch=2
    )
    latest = later + timedelta(minutes=1)
    taken = svc.jobs.advance(
        svc.jobs.get(TENANT, job.job_id), latest, latest + timedelta(minutes=1), region_epoch=3
    )

    assert (first.applied, again.applied, taken.applied) == (True, True, True), (
        "a job's advance at the epoch that last advanced it, or a later one, is applied"
    )


def test_a_take_over_on_the_lease_table_fences_the_old_holder(clients: AwsClients) -> None:
    table = fresh_lease_table(clients)
    clock = ManualClock(NOON)
    times = LeaseTimes(lease_sec=20.0, renew_sec=5.0, margin_sec=5.0)
    east, west = (
        RegionFence(
            lease_store(clients, table),
            me=me,
            initial=EAST,
            times=times,
            monotonic=clock.monotonic,
        )
        for me in (EAST, WEST)
    )
    acting = [(east.step(), west.step())]
    clock.advance(5)
    acting.append((east.step(), west.step()))
    for _ in range(5):
        clock.advance(5)
        acting.append((False, west.step()))
    clock.advance(5)
    acting.append((east.step(), west.step()))

    assert acting == [(True, False)] * 2 + [(False, False)] * 4 + [(False, True)] * 2, (
        "a standby takes over after lease + margin of silence from the holder's last renewal "
        "(its first, so the lease is not at 0 renewals), and the old holder's renewal, "
        "conditional on holder and epoch, fails: it stops at once"
    )


def test_a_fenced_driver_does_not_claim_its_second(
    make_svc: ServicesFactory, clients: AwsClients, clock: ManualClock
) -> None:
    svc = _regional(make_svc, clients, WEST)
    lease_store(clients, svc.settings.region_lease_table).create(EAST)

    run = svc.driver.run(keep_going=lambda: False, wait=lambda _: None, ticks=1)

    assert (run.seconds, run.ticks) == (1, 0)
    assert not svc.due.second_claimed(clock.now()), (
        "a driver whose region does not hold the region lease neither claims nor sweeps"
    )


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rates=RATES, actions=st.lists(ACTIONS, min_size=1, max_size=12))
def test_two_regions_over_one_moto_lease_table_never_both_act(
    clients: AwsClients, rates: tuple[float, float], actions: list[tuple[str, float]]
) -> None:
    """The unit property's interleavings on the real conditional writes, a few of them (each
    example a table of its own), to keep it near a second."""
    store = lease_store(clients, fresh_lease_table(clients))

    acting = both_acting(store, rates, actions)

    assert acting is None, f"two regions may act at once over moto ({acting}): the fence failed"
