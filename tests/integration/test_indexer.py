"""The due indexer on moto: the API writes only jobs, the jobs table's stream carries each change,
and the real indexer puts the due items the scheduler claims."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.indexer.handler import handler
from takt.api.jobs import JobService
from takt.api.models import JobCreate, JobPatch
from takt.clock import ManualClock
from takt.dispatch.indexer import due_write
from takt.models.records import JobStatus
from takt.wiring import Services, install
from takt_cli.local.events import LocalContext
from tests.support.history import NOT_DUE_ITEMS, HistoryChecker
from tests.support.indexer import index_due, stream_records

TENANT = "tenant-a"
EVENTS = Path(__file__).resolve().parents[2] / "events"


def due_keys(svc: Services) -> list[str]:
    """The due items as `<due ms>#<tenant>#<job>`, the watermark, watch lists and the minutes'
    sampled counts (written for about one job in 16) left out."""
    items = svc.clients.dynamodb.scan(TableName=svc.settings.due_table, ConsistentRead=True)
    return sorted(
        i["due_key"]["S"] for i in items["Items"] if not i["bucket"]["S"].startswith(NOT_DUE_ITEMS)
    )


def create(svc: Services, **fields: Any) -> str:
    body = JobCreate(target="https://svc.example/hook", **fields)
    job, created = JobService(svc.api).create(TENANT, body, None)
    assert created
    return job.job_id


def test_the_api_writes_no_due_item_and_the_indexer_writes_it(
    svc: Services, clock: ManualClock
) -> None:
    job_id = create(svc, interval="1h")

    before = due_keys(svc)
    result = index_due(svc)

    assert before == []
    assert result.indexed == 1
    [key] = due_keys(svc)
    assert key.endswith(f"#{TENANT}#{job_id}")


def test_a_one_off_created_through_the_api_is_dispatched_once_indexed(
    svc: Services, clock: ManualClock
) -> None:
    job_id = create(svc, run_at=clock.now() + timedelta(seconds=1))

    not_yet = svc.ticker.tick(clock.now() + timedelta(seconds=1)).total.dispatched
    index_due(svc)
    clock.advance(1)
    fired = svc.ticker.tick(clock.now()).total.dispatched

    assert (not_yet, fired) == (0, 1)
    assert svc.jobs.get(TENANT, job_id).status == JobStatus.COMPLETED


def test_the_claimers_advance_is_not_indexed_again(svc: Services, clock: ManualClock) -> None:
    create(svc, interval="10s", start_at=clock.now())
    index_due(svc)
    clock.advance(10)
    assert svc.ticker.tick(clock.now()).total.dispatched == 1

    result = index_due(svc)

    # Two records: the indexer's own clearing of the job's `unindexed` marker, and the advance.
    assert (result.indexed, result.ignored) == (0, 2)
    assert len(due_keys(svc)) == 1  # the claimer indexed the next occurrence itself


def test_a_rescheduled_job_is_indexed_at_its_new_time(svc: Services, clock: ManualClock) -> None:
    job_id = create(svc, interval="1h")
    index_due(svc)

    JobService(svc.api).update(TENANT, job_id, JobPatch(interval="5m"), None)
    result = index_due(svc)

    assert result.indexed == 1
    new_due = svc.jobs.get(TENANT, job_id).next_run_time
    assert new_due is not None
    assert f"{int(new_due.timestamp() * 1000):013d}#{TENANT}#{job_id}" in due_keys(svc)


def test_pausing_indexes_nothing_and_resuming_indexes_again(
    svc: Services, clock: ManualClock
) -> None:
    job_id = create(svc, interval="1h")
    index_due(svc)
    service = JobService(svc.api)

    service.update(TENANT, job_id, JobPatch(status="paused"), None)
    paused = index_due(svc)
    clock.advance(60)
    service.update(TENANT, job_id, JobPatch(status="active"), None)
    resumed = index_due(svc)

    assert (paused.indexed, resumed.indexed) == (0, 1)


def test_a_renamed_job_is_not_indexed_again(svc: Services, clock: ManualClock) -> None:
    job_id = create(svc, interval="1h")
    index_due(svc)

    JobService(svc.api).update(TENANT, job_id, JobPatch(name="renamed"), None)

    assert index_due(svc).indexed == 0


def test_a_deleted_job_indexes_nothing(svc: Services, clock: ManualClock) -> None:
    job_id = create(svc, interval="1h")
    index_due(svc)

    JobService(svc.api).delete(TENANT, job_id)

    assert index_due(svc).indexed == 0


def test_records_delivered_twice_leave_the_same_index(svc: Services, clock: ManualClock) -> None:
    create(svc, interval="1h")
    create(svc, run_at=clock.now() + timedelta(minutes=3))
    records = stream_records(svc)
    svc.indexer.index_all(records)
    once = due_keys(svc)

    clock.advance(5)
    svc.indexer.index_all(records)

    assert len(once) == 2
    assert due_keys(svc) == once


def test_nothing_created_through_the_api_and_indexed_is_lost(
    svc: Services, clock: ManualClock
) -> None:
    jobs = [create(svc, run_at=clock.now() + timedelta(seconds=i)) for i in range(4)]
    index_due(svc)

    for _ in range(5):
        svc.ticker.tick(clock.now())
        clock.advance(1)

    runs = [
        svc.executions.list_for_job(TENANT, job_id, limit=10, cursor=None)[0] for job_id in jobs
    ]
    assert [len(r) for r in runs] == [1, 1, 1, 1]
    assert HistoryChecker(svc).due_items() == []


def test_the_handler_indexes_its_sample_event(svc: Services) -> None:
    install(svc)
    try:
        result = handler(
            json.loads((EVENTS / "indexer_stream.json").read_text()),
            cast(LambdaContext, LocalContext(function_name="takt-indexer")),
        )
    finally:
        install(None)

    assert result == {"batchItemFailures": []}
    assert due_keys(svc) == [f"{1772517600000:013d}#acme#job_sampleindex"]


def test_a_record_that_cannot_be_indexed_is_quarantined_and_not_retried(
    svc: Services,
) -> None:
    """A record fault would fail the same way on every retry: it is parked, not reported."""
    event = json.loads((EVENTS / "indexer_stream.json").read_text())
    event["Records"][0]["dynamodb"]["NewImage"]["next_run_time"] = {"S": "not a time"}
    event["Records"].append(json.loads(json.dumps(event["Records"][0])))
    event["Records"][1]["dynamodb"]["SequenceNumber"] = "112"
    event["Records"][1]["dynamodb"]["NewImage"]["next_run_time"] = {"S": "2026-03-03T07:00:00Z"}
    install(svc)
    try:
        result = handler(event, cast(LambdaContext, LocalContext(function_name="takt-indexer")))
    finally:
        install(None)

    assert result == {"batchItemFailures": []}
    assert due_keys(svc) == [f"{1772521200000:013d}#acme#job_sampleindex"]
    [record] = svc.quarantine.list()
    assert (record.where, record.key) == (
        "indexer",
        {"tenant_id": "acme", "job_id": "job_sampleindex"},
    )


def test_due_write_ignores_removals_and_jobs_without_a_next_run() -> None:
    image = {
        "tenant_id": {"S": "t"},
        "job_id": {"S": "j"},
        "status": {"S": "completed"},
        "version": {"N": "1"},
    }

    assert due_write({"eventName": "REMOVE", "dynamodb": {"OldImage": image}}) is None
    assert due_write({"eventName": "MODIFY", "dynamodb": {"NewImage": image}}) is None
