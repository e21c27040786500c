"""Nothing the API acknowledged stays unindexed: the reconciler repairs the due item of a job
whose `unindexed` marker no indexer cleared, however long the indexer was down, and the
occurrence runs late with its lateness recorded (docs/RELIABILITY.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from takt.api.jobs import JobService
from takt.api.models import JobCreate, JobPatch
from takt.clock import ManualClock
from takt.models.ids import to_ms
from takt.models.records import ExecState
from takt.store.jobs import UNINDEXED_SHARDS
from takt.wiring import Services
from tests.support.indexer import index_due, stream_records
from tests.support.lanes import drain
from tests.support.receiver import Receiver

TENANT = "tenant-a"


def _create(svc: Services, **fields: Any) -> str:
    job, created = JobService(svc.api).create(TENANT, JobCreate(**fields), None)
    assert created
    return job.job_id


def _markers(svc: Services) -> list[tuple[str, int]]:
    return [
        (m.job_id, m.marked_ms)
        for shard in range(UNINDEXED_SHARDS)
        for m in svc.jobs.unindexed(shard, 2**62)
    ]


def test_a_job_no_indexer_ever_indexed_runs_late_once_reconciled(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    """The indexer is down past the stream's 24 hours: nothing else would ever index the job."""
    due = clock.now() + timedelta(minutes=1)
    job_id = _create(svc, run_at=due, target=receiver.url)
    clock.set(due + timedelta(hours=25))

    before = svc.ticker.tick(clock.now()).total.dispatched
    reconciled = svc.reconciler.run(clock.now())
    fired = svc.ticker.tick(clock.now()).total.dispatched
    for message in drain(svc):
        svc.runner.process(message)

    assert (before, reconciled.found, reconciled.repaired, fired) == (0, 1, 1, 1)
    assert len(receiver.calls) == 1
    [execution], _ = svc.executions.list_for_job(TENANT, job_id, limit=10, cursor=None)
    assert execution.state == ExecState.SUCCEEDED
    assert execution.scheduled_time == due
    # Its lateness is recorded: 25 hours, from the job's own time.
    assert execution.lag_ms == to_ms(clock.now()) - to_ms(due)
    assert _markers(svc) == []


def test_a_recurring_job_reconciled_after_an_outage_follows_its_catchup_rule(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    start = clock.now()
    job_id = _create(svc, interval="1h", start_at=start, catchup="once", target=receiver.url)
    clock.set(start + timedelta(hours=3, minutes=30))

    svc.reconciler.run(clock.now())
    svc.ticker.tick(clock.now())
    for message in drain(svc):
        svc.runner.process(message)

    history, _ = svc.executions.list_for_job(TENANT, job_id, limit=10, cursor=None)
    by_time = {e.scheduled_time: e.state for e in history}
    # `once`: only the latest missed occurrence runs, the others are recorded as skipped.
    assert by_time == {
        start + timedelta(hours=1): ExecState.SKIPPED,
        start + timedelta(hours=2): ExecState.SKIPPED,
        start + timedelta(hours=3): ExecState.SUCCEEDED,
    }
    assert len(receiver.calls) == 1


def test_a_marker_younger_than_the_grace_period_is_left_to_the_indexer(
    svc: Services, clock: ManualClock
) -> None:
    _create(svc, interval="1h", target="https://svc.example/hook")
    clock.advance(svc.settings.reindex_grace_sec - 1)

    assert svc.reconciler.run(clock.now()).found == 0
    assert len(_markers(svc)) == 1


def test_the_indexer_clears_the_marker_of_the_write_it_indexed(
    svc: Services, clock: ManualClock
) -> None:
    _create(svc, interval="1h", target="https://svc.example/hook")

    index_due(svc)
    clock.advance(svc.settings.reindex_grace_sec + 1)

    assert _markers(svc) == []
    assert svc.reconciler.run(clock.now()).found == 0


def test_a_later_writes_marker_outlives_the_indexing_of_an_earlier_one(
    svc: Services, clock: ManualClock
) -> None:
    job_id = _create(svc, interval="1h", target="https://svc.example/hook")
    clock.advance(5)
    JobService(svc.api).update(TENANT, job_id, JobPatch(interval="5m"), None)
    created, updated = stream_records(svc)

    svc.indexer.index(created)
    left = _markers(svc)
    svc.indexer.index(updated)

    assert left == [(job_id, to_ms(clock.now()))]
    assert _markers(svc) == []
