"""A claim's executions stay out of the watchdog's `open` index, and its watch list keeps every
guarantee the index gave (issue 15: two write units of every execution).

Real `Claimer` and `Watchdog` on moto; the verdicts read the raw tables (is the item in the
index, is a watch item left) and the lane (what was sent), not takt's own counters.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.executions.lifecycle import Lifecycle
from takt.executions.rules import Report
from takt.models.ids import execution_id, new_job_id, to_ms
from takt.models.records import ExecState, JobRecord
from takt.resources import OPEN_INDEX
from takt.store.due import minute_of
from takt.store.watches import PREFIX, ExecutionRef, Watched
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring import Services
from tests.support.faults import Crash, Throttled, crash_on
from tests.support.jobs import (
    TENANT,
    jobs_due_in_shard,
    make_execution,
    store_execution,
)
from tests.support.lanes import drain

SHARD = 0
DUE = datetime(2026, 3, 2, 12, 0, 5, tzinfo=UTC)


def _jobs(svc: Services, count: int, **fields: Any) -> list[JobRecord]:
    return jobs_due_in_shard(svc, count, DUE, SHARD, **fields)


def _claimer(svc: Services, executions: Any = None) -> Claimer:
    return Claimer(
        ClaimerSettings.of(svc.settings), svc.jobs, svc.due, executions or svc.executions, svc.lanes
    )


def _watchdog(svc: Services) -> Watchdog:
    return Watchdog(WatchdogSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes)


def _indexed(svc: Services) -> set[str]:
    """The execution ids the `open` index holds (a scan of the index, not takt's query)."""
    resp = svc.clients.dynamodb.scan(TableName=svc.settings.executions_table, IndexName=OPEN_INDEX)
    return {item["execution_id"]["S"] for item in resp.get("Items", [])}


def _watch_items(svc: Services) -> list[dict[str, Any]]:
    resp = svc.clients.dynamodb.scan(TableName=svc.settings.due_table)
    return [i for i in resp.get("Items", []) if i["bucket"]["S"].startswith(PREFIX)]


def _listed(svc: Services) -> set[str]:
    return {
        entry["S"].split("#", 1)[1]
        for item in _watch_items(svc)
        for entry in item["executions"]["L"]
    }


def _after_check(svc: Services) -> datetime:
    """A sweep time past the claim's check time (the resend wait) and the clock margin."""
    settings = svc.settings
    return DUE + timedelta(
        seconds=settings.pending_resend_after_sec + settings.clock_margin_sec + 2
    )


def test_a_claimed_execution_is_listed_for_the_watchdog_not_indexed(svc: Services) -> None:
    jobs = _jobs(svc, 3)

    result = _claimer(svc).claim(minute_of(DUE), SHARD, DUE)

    ids = {execution_id(job.job_id, DUE) for job in jobs}
    assert result.dispatched == 3
    assert _indexed(svc) == set()
    assert _listed(svc) == ids
    assert len(_watch_items(svc)) == 1  # one write for the claim, not one per execution
    assert {m.execution_id for m in drain(svc)} == ids


def test_an_execution_whose_message_was_lost_is_sent_again_after_its_check(
    svc: Services,
) -> None:
    (job,) = _jobs(svc, 1)
    _claimer(svc).claim(minute_of(DUE), SHARD, DUE)
    assert len(drain(svc)) == 1  # received and deleted unprocessed: the message is gone
    watchdog = _watchdog(svc)

    early = watchdog.sweep(DUE + timedelta(seconds=5))
    assert (early.watches, early.resent) == (0, 0)
    assert drain(svc) == []

    late = watchdog.sweep(_after_check(svc))
    assert (late.watches, late.watched_open, late.resent) == (1, 1, 1)
    assert [m.execution_id for m in drain(svc)] == [execution_id(job.job_id, DUE)]
    assert _watch_items(svc) == []


def test_executions_that_ended_in_time_never_enter_the_index(svc: Services) -> None:
    _jobs(svc, 2)
    _claimer(svc).claim(minute_of(DUE), SHARD, DUE)
    lifecycle = Lifecycle(svc.settings, svc.jobs, svc.executions, svc.lanes)
    for message in drain(svc):
        leased = lifecycle.lease(message, "worker-1", DUE + timedelta(seconds=1))
        report = Report(ExecState.SUCCEEDED.value, status_code=200)
        assert lifecycle.complete(leased, ExecState.SUCCEEDED, DUE + timedelta(seconds=2), report)

    swept = _watchdog(svc).sweep(_after_check(svc))

    assert (swept.watches, swept.watched_open, swept.candidates) == (1, 0, 0)
    assert _indexed(svc) == set()
    assert _watch_items(svc) == []


def test_a_dead_workers_execution_is_indexed_and_retried_after_its_lease(svc: Services) -> None:
    _jobs(svc, 1)
    _claimer(svc).claim(minute_of(DUE), SHARD, DUE)
    lifecycle = Lifecycle(svc.settings, svc.jobs, svc.executions, svc.lanes)
    (message,) = drain(svc)
    leased_at = DUE + timedelta(seconds=1)
    lifecycle.lease(message, "worker-that-dies", leased_at)
    expiry = leased_at + timedelta(seconds=svc.settings.lease_sec)
    at = max(_after_check(svc), expiry + timedelta(seconds=svc.settings.clock_margin_sec + 1))

    # One sweep: the watch check indexes it, and the pass over the index retries it.
    swept = _watchdog(svc).sweep(at)

    assert (swept.watched_open, swept.lease_expired) == (1, 1)
    (again,) = drain(svc)
    assert (again.execution_id, again.attempt) == (message.execution_id, 2)


def test_a_claim_that_dies_after_its_watch_leaves_nothing_unchecked(svc: Services) -> None:
    """The watch is written before the executions: a claim dying right after it lists
    executions that do not exist yet; the check passes over them, and the redone claim's own
    list covers what it creates."""
    (job,) = _jobs(svc, 1)
    failing = crash_on(svc.executions, "create", when="before")
    try:
        _claimer(svc, failing).claim(minute_of(DUE), SHARD, DUE)
    except Crash:
        pass
    else:
        raise AssertionError("the claim should have died at its create")
    assert _listed(svc) == {execution_id(job.job_id, DUE)}

    _claimer(svc).claim(minute_of(DUE), SHARD, DUE + timedelta(seconds=1))
    drain(svc)  # the message is lost after the redone claim sent it
    swept = _watchdog(svc).sweep(_after_check(svc) + timedelta(seconds=1))

    assert (swept.watches, swept.watched_open, swept.resent) == (2, 1, 1)
    assert _watch_items(svc) == []


def test_queued_executions_and_workflow_runs_still_enter_the_index(svc: Services) -> None:
    (job,) = _jobs(svc, 1, overlap="queue", catchup="all")
    occurrence = execution_id(job.job_id, DUE)
    holder = execution_id(job.job_id, DUE - timedelta(seconds=30))
    svc.jobs.take_slot(TENANT, job.job_id, holder, expected=None)
    _running_holder(svc, job, holder)

    _claimer(svc).claim(minute_of(DUE), SHARD, DUE)

    assert svc.executions.get(TENANT, occurrence).state == ExecState.QUEUED
    assert occurrence in _indexed(svc)


def _running_holder(svc: Services, job: JobRecord, holder_id: str) -> None:
    scheduled = DUE - timedelta(seconds=30)
    record = make_execution(job, scheduled, DUE, state=ExecState.RUNNING)
    assert record.execution_id == holder_id
    store_execution(svc, record, DUE)


def test_watched_reads_in_batches_and_tells_the_unwritten_from_the_indexed(svc: Services) -> None:
    jobs = _jobs(svc, 1)
    _claimer(svc).claim(minute_of(DUE), SHARD, DUE)
    real = ExecutionRef(TENANT, execution_id(jobs[0].job_id, DUE))
    missing = [ExecutionRef(TENANT, execution_id(new_job_id(), DUE)) for _ in range(150)]

    found = svc.executions.watched([*missing, real])
    assert found.unended == [real]
    assert sorted(found.unwritten, key=str) == sorted(missing, key=str)
    assert svc.executions.watch_open(real, to_ms(DUE))
    assert svc.executions.watched([real]) == Watched([], [])
    assert not svc.executions.watch_open(real, to_ms(DUE))


def test_watched_asks_again_for_the_keys_a_throttled_read_left(svc: Services) -> None:
    jobs = _jobs(svc, 4)
    _claimer(svc).claim(minute_of(DUE), SHARD, DUE)
    refs = [ExecutionRef(TENANT, execution_id(job.job_id, DUE)) for job in jobs]
    throttled = Throttled(svc.clients.dynamodb)
    store = copy.copy(svc.executions)
    store._db = throttled  # type: ignore[assignment]

    assert sorted(store.watched(refs).unended, key=str) == sorted(refs, key=str)
    assert throttled.batch_calls == 2
