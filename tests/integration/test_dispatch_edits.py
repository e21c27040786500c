"""Edits win over claims (DESIGN invariant 8): an edit the API acknowledged before an
occurrence's due time decides it, however early the claim ran.

The claim runs ahead of the due time (`dispatch_ahead_sec`), so an edit can land between the
claim's read of the job and its advance, or between the API's read and its write, around the
claim. Each test puts the edit at one of those instants (`precede`: right before the other
actor's write) on the manual clock, and then checks what the schedule leaves behind.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from takt.api.jobs import JobService
from takt.api.models import JobCreate, JobPatch
from takt.clock import ManualClock
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.models.ids import execution_id
from takt.models.records import ExecState, JobStatus
from takt.store.due import minute_of, shard_of
from takt.store.jobs import JobStore
from takt.wiring import Services
from tests.integration.worker.conftest import runner_for
from tests.support.faults import precede
from tests.support.indexer import index_due
from tests.support.jobs import TENANT, UNREACHABLE
from tests.support.lanes import drain
from tests.support.receiver import Receiver

THIRTEEN = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
CLAIMED_AT = THIRTEEN - timedelta(seconds=1)
EDITED_AT = THIRTEEN - timedelta(milliseconds=500)


def _claimer(svc: Services, jobs: JobStore | None = None) -> Claimer:
    return Claimer(
        ClaimerSettings.of(svc.settings), jobs or svc.jobs, svc.due, svc.executions, svc.lanes
    )


def _claim(svc: Services, claimer: Claimer, job_id: str, now: datetime) -> None:
    shard = shard_of(TENANT, job_id, svc.due.shards)
    claimer.claim(minute_of(now + timedelta(seconds=1)), shard, now)


def _states(svc: Services, job_id: str) -> dict[datetime, ExecState]:
    page, _ = svc.executions.list_for_job(TENANT, job_id, limit=200, cursor=None)
    return {r.scheduled_time: r.state for r in page}


def _run_minutes(svc: Services, clock: ManualClock, minutes: int) -> None:
    """Tick through `minutes` minutes from 13:00, one tick at each minute's due instant and one
    a second later, indexing what the API wrote in between (as the stream's indexer does)."""
    for minute in range(minutes):
        for offset in (0, 1):
            clock.set(THIRTEEN + timedelta(minutes=minute, seconds=offset))
            index_due(svc)
            svc.ticker.tick(clock.now())


def test_an_hourly_job_made_every_minute_just_before_it_fires_keeps_every_new_occurrence(
    svc: Services, clock: ManualClock
) -> None:
    """The issue's case: hourly, changed to every minute at 12:59:59.5, acknowledged while the
    claim of 13:00 (made at 12:59:59) was between its read and its advance."""
    api = JobService(svc.api)
    clock.set(THIRTEEN - timedelta(minutes=5))
    job, _ = api.create(TENANT, JobCreate(schedule="0 * * * *", target=UNREACHABLE), None)
    index_due(svc)
    acknowledged = []

    def edit() -> None:
        clock.set(EDITED_AT)
        acknowledged.append(api.update(TENANT, job.job_id, JobPatch(schedule="* * * * *"), None))
        clock.set(CLAIMED_AT)

    _claim(svc, _claimer(svc, jobs=precede(svc.jobs, "advance", edit)), job.job_id, CLAIMED_AT)
    assert [j.version for j in acknowledged] == [2]
    _run_minutes(svc, clock, 6)

    states = _states(svc, job.job_id)
    minutes = [THIRTEEN + timedelta(minutes=m) for m in range(6)]
    # Every occurrence of the new schedule has an execution: run, or recorded with a reason.
    assert [t for t in minutes if t not in states] == []
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == THIRTEEN + timedelta(minutes=6)


def test_an_edit_that_lands_after_the_claims_advance_still_keeps_every_new_occurrence(
    svc: Services, clock: ManualClock
) -> None:
    """The other order: the claim advanced the hourly job to 14:00 first, then the edit's
    new schedule points it back at 13:00, whose execution the claim already made."""
    api = JobService(svc.api)
    clock.set(THIRTEEN - timedelta(minutes=5))
    job, _ = api.create(TENANT, JobCreate(schedule="0 * * * *", target=UNREACHABLE), None)
    index_due(svc)
    _claim(svc, _claimer(svc), job.job_id, CLAIMED_AT)
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == THIRTEEN + timedelta(hours=1)

    clock.set(EDITED_AT)
    api.update(TENANT, job.job_id, JobPatch(schedule="* * * * *"), None)
    _run_minutes(svc, clock, 6)

    states = _states(svc, job.job_id)
    minutes = [THIRTEEN + timedelta(minutes=m) for m in range(6)]
    assert [t for t in minutes if t not in states] == []
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == THIRTEEN + timedelta(minutes=6)


def test_a_one_off_moved_while_its_claim_completes_it_runs_at_its_new_time(
    svc: Services, clock: ManualClock
) -> None:
    """The API reads the one-off (active), the claim made ahead completes it, then the API's
    write moves it ten minutes on: it must be active there, with its due item, not completed."""
    api = JobService(svc.api)
    clock.set(THIRTEEN - timedelta(minutes=5))
    job, _ = api.create(TENANT, JobCreate(run_at=THIRTEEN, target=UNREACHABLE), None)
    index_due(svc)
    moved = THIRTEEN + timedelta(minutes=10)

    def claim() -> None:
        _claim(svc, _claimer(svc), job.job_id, CLAIMED_AT)
        assert svc.jobs.get(TENANT, job.job_id).status == JobStatus.COMPLETED

    clock.set(EDITED_AT)
    data = svc.api.tenant(TENANT)
    raced = replace(data, jobs=precede(data.jobs, "update_definition", claim))
    racing = replace(svc.api, tenant=lambda _tenant_id: raced)
    JobService(racing).update(TENANT, job.job_id, JobPatch(run_at=moved), None)

    stored = svc.jobs.get(TENANT, job.job_id)
    assert (stored.status, stored.next_run_time, stored.version) == (
        JobStatus.ACTIVE,
        moved,
        2,
    )
    index_due(svc)
    clock.set(moved)
    svc.ticker.tick(clock.now())
    assert svc.executions.get(TENANT, execution_id(job.job_id, moved)).state == ExecState.PENDING


def _edit_one_off(api: JobService, job_id: str, edit: str) -> None:
    if edit == "paused":
        api.update(TENANT, job_id, JobPatch(status="paused"), None)
    elif edit == "deleted":
        api.delete(TENANT, job_id)
    else:
        api.update(TENANT, job_id, JobPatch(run_at=THIRTEEN + timedelta(minutes=10)), None)


@pytest.mark.parametrize("edit", ["paused", "deleted", "moved"])
def test_a_claimed_one_off_edited_before_its_time_is_skipped_with_the_reason_not_run(
    svc: Services, clock: ManualClock, receiver: Receiver, edit: str
) -> None:
    api = JobService(svc.api)
    clock.set(THIRTEEN - timedelta(minutes=5))
    job, _ = api.create(TENANT, JobCreate(run_at=THIRTEEN, target=receiver.url), None)
    index_due(svc)
    clock.set(CLAIMED_AT)
    svc.ticker.tick(clock.now())
    [message] = drain(svc)

    clock.set(EDITED_AT)
    _edit_one_off(api, job.job_id, edit)
    clock.set(THIRTEEN)
    outcome = runner_for(svc, "w").process(message)

    assert outcome.state == "skipped"
    assert receiver.calls == []
    record = svc.executions.get(TENANT, message.execution_id)
    assert (record.state, record.reason, record.started_at) == (
        ExecState.SKIPPED,
        outcome.detail,
        None,
    )
    assert record.reason is not None
    assert {"paused": "paused", "deleted": "deleted", "moved": "no longer fires"}[edit] in (
        record.reason
    )
    # A copy of the message (a redelivery, the watchdog's resend) finds nothing to run.
    assert runner_for(svc, "w").process(message).state == "skipped"
    assert receiver.calls == []


def test_the_workers_job_read_before_a_claimed_ahead_run_is_strongly_consistent(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    """An edit the API acknowledged a moment ago may be missing from an eventually consistent
    read (moto always answers consistently, so the call itself is what is checked)."""
    api = JobService(svc.api)
    clock.set(THIRTEEN - timedelta(minutes=5))
    api.create(TENANT, JobCreate(run_at=THIRTEEN, target=receiver.url), None)
    index_due(svc)
    clock.set(CLAIMED_AT)
    svc.ticker.tick(clock.now())
    [message] = drain(svc)
    reads: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == svc.settings.jobs_table:
            reads.append(params)

    events = svc.clients.dynamodb.meta.events
    events.register("provide-client-params.dynamodb.GetItem", record)
    try:
        clock.set(THIRTEEN)
        outcome = runner_for(svc, "w").process(message)
    finally:
        events.unregister("provide-client-params.dynamodb.GetItem", record)

    assert outcome.state == "succeeded"
    assert reads, "the worker reads the job before running an occurrence claimed ahead"
    assert [r.get("ConsistentRead") for r in reads] == [True] * len(reads), (
        "the worker's job read before the run is strongly consistent (edits decide, invariant 8)"
    )


def test_a_claimed_one_off_whose_payload_changed_before_its_time_runs_as_it_now_is(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    api = JobService(svc.api)
    clock.set(THIRTEEN - timedelta(minutes=5))
    job, _ = api.create(
        TENANT, JobCreate(run_at=THIRTEEN, target=receiver.url, payload={"v": 1}), None
    )
    index_due(svc)
    clock.set(CLAIMED_AT)
    svc.ticker.tick(clock.now())
    [message] = drain(svc)

    clock.set(EDITED_AT)
    api.update(TENANT, job.job_id, JobPatch(payload={"v": 2}), None)
    clock.set(THIRTEEN)
    outcome = runner_for(svc, "w").process(message)

    assert outcome.state == "succeeded"
    assert [json.loads(c.body) for c in receiver.calls] == [{"v": 2}]
    record = svc.executions.get(TENANT, message.execution_id)
    assert (record.job_version, record.payload) == (2, {"v": 2})


def test_an_edit_after_the_due_time_does_not_stop_a_claimed_occurrence(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    """The rule is about edits acknowledged before the due time: a claim made at or after it
    read every such edit, and its run is not checked again."""
    api = JobService(svc.api)
    clock.set(THIRTEEN - timedelta(minutes=5))
    job, _ = api.create(TENANT, JobCreate(run_at=THIRTEEN, target=receiver.url), None)
    index_due(svc)
    clock.set(THIRTEEN + timedelta(seconds=svc.settings.clock_margin_sec))
    svc.ticker.tick(clock.now())
    [message] = drain(svc)

    api.update(TENANT, job.job_id, JobPatch(status="paused"), None)
    outcome = runner_for(svc, "w").process(message)

    assert outcome.state == "succeeded"
    assert len(receiver.calls) == 1
