"""One execution the watchdog cannot read or write stops no sweep (DESIGN invariant 9): it is
parked in quarantine and out of the `open` index, and every other candidate is still swept."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from takt.clock import ManualClock
from takt.models.records import JobRecord, RetryPolicy
from takt.wiring import Services
from tests.support.jobs import TENANT, make_execution, make_job, store_execution
from tests.support.lanes import drain

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _jobs(svc: Services, clock: ManualClock, count: int) -> list[JobRecord]:
    jobs = []
    for _ in range(count):
        job = make_job(
            now=clock.now(), next_run_time=None, run_at=NOON, retry=RetryPolicy(max_attempts=3)
        )
        svc.jobs.create(job)
        jobs.append(job)
    return jobs


def _open_keys(svc: Services) -> set[str]:
    keys = set()
    for shard in range(svc.settings.open_shards):
        for item in svc.executions.open_candidates(str(shard), 2**62):
            keys.add(item.job_key)
    return keys


def test_an_execution_that_cannot_be_parsed_is_quarantined_and_the_others_are_swept(
    svc: Services, clock: ManualClock
) -> None:
    bad, *healthy = _jobs(svc, clock, 4)
    records = {
        job.job_id: store_execution(svc, make_execution(job, NOON, clock.now()), clock.now())
        for job in (bad, *healthy)
    }
    key = svc.executions.key(TENANT, records[bad.job_id].execution_id)
    svc.clients.dynamodb.update_item(
        TableName=svc.settings.executions_table,
        Key=key,
        UpdateExpression="SET scheduled_time = :x",
        ExpressionAttributeValues={":x": {"S": "not a time"}},
    )
    clock.advance(svc.settings.pending_resend_after_sec + svc.settings.clock_margin_sec + 1)

    try:
        result = svc.watchdog.sweep(clock.now())
    except Exception as exc:  # noqa: BLE001 - any error out of the sweep is the rule broken
        pytest.fail(
            f"no record stops others (invariant 9): one bad execution ended the sweep: {exc!r}"
        )
    resent = drain(svc)
    clock.advance(svc.settings.pending_resend_after_sec + svc.settings.clock_margin_sec + 1)
    again = svc.watchdog.sweep(clock.now())

    assert (result.resent, result.quarantined) == (3, 1)
    assert {m.execution_id for m in resent} == {records[j.job_id].execution_id for j in healthy}
    # Out of the open index: the next sweep meets only the healthy ones again.
    assert (again.candidates, again.quarantined) == (3, 0)
    assert key["job_key"]["S"] not in _open_keys(svc)
    [record] = svc.quarantine.list()
    assert record.table == "executions"
    assert record.key == {"job_key": key["job_key"]["S"], "sk": key["sk"]["S"]}
    assert record.where == "watchdog"
    assert record.tenant_id == TENANT
    assert record.restore is not None and "open_shard" in record.restore
