"""One record the claimer cannot read or write stops no one else (DESIGN invariant 9).

A job whose stored time cannot be read back (a start in year 500, which the API refuses but an
older writer or a hand edit may have stored) shares a (minute, shard) partition with healthy
jobs of another tenant: the healthy ones are claimed and run, the bad one is parked in
quarantine, out of the due index, and no later claim meets it again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.models.records import ExecState, JobStatus
from takt.store.due import minute_of
from takt.wiring import Services
from tests.support.history import NOT_DUE_ITEMS
from tests.support.jobs import job_id_in_shard, make_job, store_job
from tests.support.lanes import drain
from tests.support.receiver import Receiver

SHARD = 1
BAD_TENANT = "tenant-bad"
GOOD_TENANT = "tenant-good"
YEAR_500 = datetime(500, 1, 1, tzinfo=UTC)


def _due_keys(svc: Services) -> list[str]:
    items = svc.clients.dynamodb.scan(TableName=svc.settings.due_table, ConsistentRead=True)
    return [
        i["due_key"]["S"] for i in items["Items"] if not i["bucket"]["S"].startswith(NOT_DUE_ITEMS)
    ]


def test_a_year_500_job_is_quarantined_and_its_neighbours_run(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    now = clock.now()
    shards = svc.settings.due_shards
    bad = make_job(
        now=now,
        next_run_time=YEAR_500,
        tenant_id=BAD_TENANT,
        job_id=job_id_in_shard(BAD_TENANT, SHARD, shards),
        schedule="* * * * *",
        start_at=YEAR_500,
    )
    store_job(svc, bad, now)
    good = [
        store_job(
            svc,
            make_job(
                now=now,
                next_run_time=now,
                tenant_id=GOOD_TENANT,
                job_id=job_id_in_shard(GOOD_TENANT, SHARD, shards),
                target=receiver.url,
            ),
            now,
        )
        for _ in range(3)
    ]

    try:
        first = svc.claimer.claim(minute_of(now), SHARD, now)
    except Exception as exc:  # noqa: BLE001 - any error out of the claim is the rule broken
        pytest.fail(f"no record stops others (invariant 9): one bad job ended the claim: {exc!r}")
    for message in drain(svc):
        svc.runner.process(message)
    clock.advance(1)
    again = svc.claimer.claim(minute_of(clock.now()), SHARD, clock.now())

    assert (first.dispatched, first.quarantined) == (3, 1)
    assert len(receiver.calls) == 3
    for job in good:
        [execution], _ = svc.executions.list_for_job(GOOD_TENANT, job.job_id, limit=10, cursor=None)
        assert execution.state == ExecState.SUCCEEDED
        assert svc.jobs.get(GOOD_TENANT, job.job_id).status == JobStatus.COMPLETED
    # Parked: out of the due index, so the next claim meets nothing of it.
    assert not any(key.endswith(bad.job_id) for key in _due_keys(svc))
    assert (again.due, again.quarantined) == (0, 0)
    [record] = svc.quarantine.list()
    assert record.table == "jobs"
    assert record.key == {"tenant_id": BAD_TENANT, "job_id": bad.job_id}
    assert record.where == "claimer"
    assert "execution id" in record.error
    assert record.seen == 1
    assert record.tenant_id == BAD_TENANT
    assert record.first_at == record.last_at != ""


def test_a_job_item_that_cannot_be_parsed_is_quarantined_beside_healthy_ones(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    now = clock.now()
    shards = svc.settings.due_shards
    broken = make_job(
        now=now, next_run_time=now, job_id=job_id_in_shard(BAD_TENANT, SHARD, shards)
    ).model_copy(update={"tenant_id": BAD_TENANT})
    store_job(svc, broken, now)
    svc.clients.dynamodb.update_item(
        TableName=svc.settings.jobs_table,
        Key={"tenant_id": {"S": BAD_TENANT}, "job_id": {"S": broken.job_id}},
        UpdateExpression="SET created_at = :x",
        ExpressionAttributeValues={":x": {"S": "not a time"}},
    )
    healthy = store_job(
        svc,
        make_job(
            now=now,
            next_run_time=now,
            tenant_id=GOOD_TENANT,
            job_id=job_id_in_shard(GOOD_TENANT, SHARD, shards),
            target=receiver.url,
        ),
        now,
    )

    result = svc.ticker.tick(now).total

    assert (result.dispatched, result.quarantined) == (1, 1)
    [message] = drain(svc)
    assert message.execution_id.startswith(healthy.job_id)
    [record] = svc.quarantine.list()
    assert record.key == {"tenant_id": BAD_TENANT, "job_id": broken.job_id}


def test_a_due_item_that_cannot_be_read_is_quarantined_and_removed(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    now = clock.now()
    shards = svc.settings.due_shards
    healthy = store_job(
        svc,
        make_job(
            now=now,
            next_run_time=now,
            tenant_id=GOOD_TENANT,
            job_id=job_id_in_shard(GOOD_TENANT, SHARD, shards),
            target=receiver.url,
        ),
        now,
    )
    bucket = svc.due.item(GOOD_TENANT, healthy.job_id, now, now)["bucket"]["S"]
    svc.clients.dynamodb.put_item(
        TableName=svc.settings.due_table,
        Item={"bucket": {"S": bucket}, "due_key": {"S": "0000000000000-garbage"}},
    )

    result = svc.claimer.claim(minute_of(now), SHARD, now + timedelta(milliseconds=1))

    assert (result.dispatched, result.quarantined) == (1, 1)
    assert _due_keys(svc) == []
    [record] = svc.quarantine.list()
    assert (record.table, record.key["due_key"]) == ("due", "0000000000000-garbage")


def test_a_job_whose_stored_target_no_worker_can_call_is_quarantined_beside_healthy_ones(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    """The store reads a target back through the one validator of targets: a job item holding
    one the API would refuse (a hand edit, an older writer) does not read, and is isolated."""
    now = clock.now()
    shards = svc.settings.due_shards
    broken = make_job(
        now=now, next_run_time=now, job_id=job_id_in_shard(BAD_TENANT, SHARD, shards)
    ).model_copy(update={"tenant_id": BAD_TENANT})
    store_job(svc, broken, now)
    svc.clients.dynamodb.update_item(
        TableName=svc.settings.jobs_table,
        Key={"tenant_id": {"S": BAD_TENANT}, "job_id": {"S": broken.job_id}},
        UpdateExpression="SET target = :x",
        ExpressionAttributeValues={":x": {"S": "ftp://svc/x"}},
    )
    healthy = store_job(
        svc,
        make_job(
            now=now,
            next_run_time=now,
            tenant_id=GOOD_TENANT,
            job_id=job_id_in_shard(GOOD_TENANT, SHARD, shards),
            target=receiver.url,
        ),
        now,
    )

    result = svc.ticker.tick(now).total

    assert (result.dispatched, result.quarantined) == (1, 1), "invariant 9: the bad one is parked"
    [message] = drain(svc)
    assert message.execution_id.startswith(healthy.job_id)
    [record] = svc.quarantine.list()
    assert record.key == {"tenant_id": BAD_TENANT, "job_id": broken.job_id}
    assert "target must be an http(s) URL" in record.error
