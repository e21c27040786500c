"""Overlap policies with a long-running handler: `skip` sees the run in progress, `queue` waits
for it, and the next occurrence after it runs again."""

from __future__ import annotations

import threading
from datetime import timedelta

from takt.clock import ManualClock
from takt.models.records import ExecState, ExecutionRecord
from takt.store.due import minute_of, shard_of
from takt.wiring import Services
from takt.worker.runner import RunOutcome
from tests.integration.worker import handlers
from tests.integration.worker.conftest import NOON, runner_for
from tests.support.jobs import TENANT, make_job, store_job
from tests.support.lanes import drain
from tests.support.threads import poll_until

DEADLINE_SEC = 10.0
MINUTE = timedelta(minutes=1)


def _fire(svc: Services, clock: ManualClock, job_id: str, at: timedelta) -> None:
    """Claim the job's partition just after its occurrence NOON + `at`, as a tick would."""
    clock.set(NOON + at + timedelta(milliseconds=100))
    shard = shard_of(TENANT, job_id, svc.due.shards)
    svc.claimer.claim(minute_of(NOON + at), shard, clock.now())


def _history(svc: Services, job_id: str) -> list[ExecutionRecord]:
    records, _ = svc.executions.list_for_job(TENANT, job_id, limit=10, cursor=None)
    return sorted(records, key=lambda r: r.scheduled_time)


def _start_long_run(svc: Services) -> tuple[threading.Thread, list[RunOutcome]]:
    [message] = drain(svc)
    outcomes: list[RunOutcome] = []
    thread = threading.Thread(
        target=lambda: outcomes.append(runner_for(svc).process(message)), daemon=True
    )
    thread.start()
    poll_until(
        lambda: svc.executions.get(TENANT, message.execution_id).state == ExecState.RUNNING,
        "the long run's lease",
    )
    return thread, outcomes


def test_skip_records_occurrences_skipped_while_a_long_handler_runs_then_runs_again(
    svc: Services, clock: ManualClock, key: str
) -> None:
    job = make_job(
        now=clock.now(),
        next_run_time=NOON,
        schedule="* * * * *",
        target="handler:it.wait",
        payload={"key": key},
        overlap="skip",
    )
    store_job(svc, job, clock.now())
    _fire(svc, clock, job.job_id, timedelta(0))
    thread, outcomes = _start_long_run(svc)

    _fire(svc, clock, job.job_id, MINUTE)
    _fire(svc, clock, job.job_id, 2 * MINUTE)
    handlers.gate(key).set()
    thread.join(timeout=DEADLINE_SEC)
    _fire(svc, clock, job.job_id, 3 * MINUTE)

    states = [(r.scheduled_time - NOON, r.state, r.reason) for r in _history(svc, job.job_id)]
    assert states == [
        (timedelta(0), ExecState.SUCCEEDED, None),
        (MINUTE, ExecState.SKIPPED, "overlap=skip"),
        (2 * MINUTE, ExecState.SKIPPED, "overlap=skip"),
        (3 * MINUTE, ExecState.PENDING, None),
    ]
    assert [o.state for o in outcomes] == ["succeeded"]


def test_queue_holds_the_next_occurrence_until_the_long_handler_ends(
    svc: Services, clock: ManualClock, key: str
) -> None:
    job = make_job(
        now=clock.now(),
        next_run_time=NOON,
        schedule="* * * * *",
        target="handler:it.wait",
        payload={"key": key},
        overlap="queue",
    )
    store_job(svc, job, clock.now())
    _fire(svc, clock, job.job_id, timedelta(0))
    thread, _ = _start_long_run(svc)

    _fire(svc, clock, job.job_id, MINUTE)
    held = [r.state for r in _history(svc, job.job_id)]
    handlers.gate(key).set()
    thread.join(timeout=DEADLINE_SEC)

    assert held == [ExecState.RUNNING, ExecState.QUEUED]
    assert [r.state for r in _history(svc, job.job_id)] == [ExecState.SUCCEEDED, ExecState.PENDING]
    assert [m.scheduled_time - NOON for m in drain(svc)] == [MINUTE]
