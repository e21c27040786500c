"""An `allow` occurrence written by the worker that leases it, not by its claim
(`Settings.record_at_lease`, the seed and tenx profiles; issue 26: one write unit of every
execution).

Real `Claimer`, `ExecutionRunner` and `Watchdog` on moto, a real loopback HTTP target. The
verdicts read the raw executions table, the lane and the receiver's count of calls, not takt's
own counters.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.config import Settings
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.executions.lifecycle import Lifecycle
from takt.models.ids import execution_id
from takt.models.lanes import LaneMessage
from takt.models.records import ExecState, JobRecord, JobStatus
from takt.resources import OPEN_INDEX
from takt.store.due import minute_of
from takt.store.errors import NotFoundError
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring import Services, build_services
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.conftest import make_settings
from tests.integration.worker.conftest import runner_for
from tests.support.jobs import TENANT, jobs_due_in_shard
from tests.support.lanes import RecordingLanes, drain
from tests.support.receiver import Receiver

SHARD = 0
DUE = datetime(2026, 3, 2, 12, 0, 5, tzinfo=UTC)


@pytest.fixture
def settings(moto_endpoint: str) -> Settings:
    return make_settings(moto_endpoint, record_at_lease=True)


@pytest.fixture
def svc(settings: Settings, clock: ManualClock) -> Services:
    clock.set(DUE)
    return build_services(settings, clock)


def _jobs(svc: Services, receiver: Receiver, count: int, **fields: Any) -> list[JobRecord]:
    """Interval jobs calling the receiver, each due at DUE in due shard SHARD."""
    return jobs_due_in_shard(
        svc, count, DUE, SHARD, interval="1h", anchor=DUE, target=receiver.url, **fields
    )


def _pause(svc: Services, job: JobRecord) -> None:
    """Pause the job as an acknowledged edit does (its version moves on)."""
    current = svc.jobs.get(TENANT, job.job_id)
    paused = current.model_copy(update={"status": JobStatus.PAUSED, "version": 2})
    svc.jobs.update_definition(paused, current.version, {"status"})


def _claim(svc: Services) -> list[LaneMessage]:
    Claimer(ClaimerSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes).claim(
        minute_of(DUE), SHARD, DUE
    )
    return drain(svc)


def _watchdog(svc: Services) -> Watchdog:
    return Watchdog(WatchdogSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes)


def _stored(svc: Services) -> dict[str, dict[str, Any]]:
    """Every execution item as the table holds it (a scan, not takt's reads)."""
    resp = svc.clients.dynamodb.scan(TableName=svc.settings.executions_table)
    return {item["execution_id"]["S"]: item for item in resp.get("Items", [])}


def _indexed(svc: Services) -> set[str]:
    resp = svc.clients.dynamodb.scan(TableName=svc.settings.executions_table, IndexName=OPEN_INDEX)
    return {item["execution_id"]["S"] for item in resp.get("Items", [])}


def _after_check(svc: Services) -> datetime:
    settings = svc.settings
    return DUE + timedelta(
        seconds=settings.pending_resend_after_sec + settings.clock_margin_sec + 2
    )


def test_the_claim_sends_without_writing_and_the_lease_writes_the_execution_once(
    svc: Services, receiver: Receiver
) -> None:
    jobs = _jobs(svc, receiver, 3)

    messages = _claim(svc)

    ids = {execution_id(job.job_id, DUE) for job in jobs}
    assert {m.execution_id for m in messages} == ids
    assert not any(m.recorded for m in messages)
    assert _stored(svc) == {}  # nothing written by the claim
    runner = runner_for(svc)
    outcomes = [runner.process(m) for m in messages]
    assert {o.state for o in outcomes} == {ExecState.SUCCEEDED.value}
    stored = _stored(svc)
    assert set(stored) == ids
    assert {item["state"]["S"] for item in stored.values()} == {ExecState.SUCCEEDED.value}
    # The snapshot the lease wrote: the job's target and version, the claim's time.
    first = svc.executions.get(TENANT, execution_id(jobs[0].job_id, DUE))
    assert (first.target, first.job_version, first.attempt) == (jobs[0].target, 1, 1)
    assert first.created_at == DUE
    assert first.started_at is not None and first.lag_ms == 0
    assert len(receiver.calls) == 3
    assert _indexed(svc) == set()


def test_a_duplicate_of_a_message_whose_lease_wrote_the_execution_calls_nothing(
    svc: Services, receiver: Receiver
) -> None:
    _jobs(svc, receiver, 1)
    (message,) = _claim(svc)

    assert runner_for(svc, "w-1").process(message).state == ExecState.SUCCEEDED.value
    again = runner_for(svc, "w-2").process(message)

    assert again.state == ExecState.SUCCEEDED.value
    assert again.detail == "duplicate or stale message"
    assert len(receiver.calls) == 1


def test_a_lost_message_is_written_pending_by_the_watch_check_sent_again_and_run_once(
    svc: Services, receiver: Receiver
) -> None:
    (job,) = _jobs(svc, receiver, 1)
    assert len(_claim(svc)) == 1  # received and deleted unprocessed: the message is lost
    watchdog = _watchdog(svc)

    assert watchdog.sweep(DUE + timedelta(seconds=5)).watches == 0
    late = watchdog.sweep(_after_check(svc))

    exec_id = execution_id(job.job_id, DUE)
    assert (late.watches, late.watched_open, late.resent) == (1, 1, 1)
    assert _stored(svc)[exec_id]["state"]["S"] == ExecState.PENDING.value
    (resent,) = drain(svc)
    assert (resent.execution_id, resent.recorded) == (exec_id, True)
    assert runner_for(svc).process(resent).state == ExecState.SUCCEEDED.value
    assert len(receiver.calls) == 1


def test_a_message_still_in_its_lane_at_the_check_runs_once_beside_the_copy_sent_again(
    svc: Services, receiver: Receiver
) -> None:
    (job,) = _jobs(svc, receiver, 1)
    (original,) = _claim(svc)
    _watchdog(svc).sweep(_after_check(svc))
    (copy,) = drain(svc)

    runner = runner_for(svc)
    first = runner.process(original)  # the late original: its lease finds the pending record
    second = runner.process(copy)

    assert first.state == ExecState.SUCCEEDED.value
    assert second.detail == "duplicate or stale message"
    assert len(receiver.calls) == 1
    assert _stored(svc)[execution_id(job.job_id, DUE)]["attempt"]["N"] == "1"


def test_an_execution_leased_and_running_at_its_check_is_indexed_not_written_again(
    svc: Services, receiver: Receiver
) -> None:
    (job,) = _jobs(svc, receiver, 1)
    (message,) = _claim(svc)
    check = _after_check(svc)
    lifecycle = Lifecycle(RunnerSettings.of(svc.settings), svc.jobs, svc.executions, svc.lanes)
    # The worker's lease write, its call still running at the check (leased just before it).
    lifecycle.lease_unrecorded(message, job, "w-1", check - timedelta(seconds=5))
    exec_id = execution_id(job.job_id, DUE)

    result = _watchdog(svc).sweep(check)

    assert (result.watches, result.watched_open, result.resent) == (1, 1, 0)
    assert _stored(svc)[exec_id]["state"]["S"] == ExecState.RUNNING.value
    assert _stored(svc)[exec_id]["worker_id"]["S"] == "w-1"
    assert exec_id in _indexed(svc)
    assert drain(svc) == []


@pytest.mark.parametrize("edit", ["paused", "moved"])
def test_an_occurrence_whose_job_was_edited_before_its_lease_is_written_skipped_not_run(
    svc: Services, receiver: Receiver, edit: str
) -> None:
    (job,) = _jobs(svc, receiver, 1)
    (message,) = _claim(svc)
    if edit == "paused":
        _pause(svc, job)
    else:
        current = svc.jobs.get(TENANT, job.job_id)
        moved = current.model_copy(update={"anchor": DUE + timedelta(minutes=7), "version": 2})
        svc.jobs.update_definition(moved, current.version, {"anchor"})

    outcome = runner_for(svc).process(message)

    assert outcome.state == ExecState.SKIPPED.value
    item = _stored(svc)[execution_id(job.job_id, DUE)]
    assert item["state"]["S"] == ExecState.SKIPPED.value
    assert "version 1 to 2" in item["reason"]["S"] or "paused" in item["reason"]["S"]
    assert receiver.calls == []


def test_an_occurrence_whose_job_was_deleted_is_written_by_no_one(
    svc: Services, receiver: Receiver
) -> None:
    (job,) = _jobs(svc, receiver, 1)
    (message,) = _claim(svc)
    svc.jobs.delete(TENANT, job.job_id)

    assert runner_for(svc).process(message).state == "missing"
    result = _watchdog(svc).sweep(_after_check(svc))

    assert (result.watches, result.watched_open, result.resent) == (1, 0, 0)
    assert _stored(svc) == {}
    assert receiver.calls == []
    with pytest.raises(NotFoundError):
        svc.executions.get(TENANT, execution_id(job.job_id, DUE))


def test_an_occurrence_of_a_job_that_holds_its_slot_is_written_by_its_claim(
    svc: Services, receiver: Receiver
) -> None:
    (job,) = _jobs(svc, receiver, 1, overlap="skip")

    (message,) = _claim(svc)

    assert message.recorded
    assert _stored(svc)[execution_id(job.job_id, DUE)]["state"]["S"] == ExecState.PENDING.value


def test_a_lost_message_of_a_job_paused_since_is_not_written_or_sent_again(
    svc: Services, receiver: Receiver
) -> None:
    (job,) = _jobs(svc, receiver, 1)
    assert len(_claim(svc)) == 1  # lost
    _pause(svc, job)

    result = _watchdog(svc).sweep(_after_check(svc))

    assert (result.watches, result.watched_open, result.resent) == (1, 0, 0)
    assert _stored(svc) == {}
    assert drain(svc) == []


def test_a_message_a_worker_sends_back_unleased_has_its_execution_written_pending_first(
    svc: Services, receiver: Receiver
) -> None:
    (job,) = _jobs(svc, receiver, 1)
    (message,) = _claim(svc)
    lanes = RecordingLanes(svc)
    other_tenant = ExecutionRunner(
        RunnerSettings.of(svc.settings.model_copy(update={"worker_tenant": "someone-else"})),
        svc.jobs,
        svc.executions,
        lanes,
        svc.targets,
        svc.clock,
        worker_id="w-other",
    )

    outcome = other_tenant.process(message)

    exec_id = execution_id(job.job_id, DUE)
    assert outcome.state == "unserved"
    assert _stored(svc)[exec_id]["state"]["S"] == ExecState.PENDING.value
    (sent,) = lanes.sent  # the copy, delayed in the lane
    copy = sent.message
    assert (copy.execution_id, copy.recorded, sent.delay_sec > 0) == (exec_id, True, True)
    assert runner_for(svc).process(copy).state == ExecState.SUCCEEDED.value
    assert len(receiver.calls) == 1
