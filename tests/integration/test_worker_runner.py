"""The worker against a real loopback HTTP target: outcomes, retries, leases and fencing."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.models.ids import to_ms
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord, JobStatus, RetryPolicy
from takt.wiring import Services
from takt.worker.runner import ExecutionRunner, RunnerSettings, RunOutcome
from tests.support.env import ServicesFactory
from tests.support.history import Expect, HistoryChecker
from tests.support.jobs import TENANT, make_execution, make_job, store_execution
from tests.support.lanes import RecordingLanes, delayed_count, drain, visible_count
from tests.support.receiver import Receiver, Reply
from tests.support.threads import in_thread, poll_until

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
FIXED_30S = RetryPolicy(backoff="fixed", initial_interval="30s", jitter="none")

Submit = Callable[..., tuple[ExecutionRecord, LaneMessage]]


class Worker:
    """A runner whose lane sends are recorded, so delayed retry messages can be inspected."""

    def __init__(self, svc: Services, worker_id: str = "w-1") -> None:
        self.lanes = RecordingLanes(svc)
        self.runner = ExecutionRunner(
            RunnerSettings.of(svc.settings),
            svc.jobs,
            svc.executions,
            self.lanes,
            svc.targets,
            svc.clock,
            worker_id=worker_id,
        )

    def process(self, message: LaneMessage) -> RunOutcome:
        return self.runner.process(message)


@pytest.fixture
def worker(svc: Services) -> Worker:
    return Worker(svc)


@pytest.fixture
def submit(svc: Services, clock: ManualClock, receiver: Receiver) -> Submit:
    """Store a job targeting the receiver and a pending execution of it; returns its message."""

    def make(**job_fields: object) -> tuple[ExecutionRecord, LaneMessage]:
        return _submit(svc, clock, receiver, **job_fields)

    return make


def _submit(
    svc: Services, clock: ManualClock, receiver: Receiver, **job_fields: object
) -> tuple[ExecutionRecord, LaneMessage]:
    attempt = int(job_fields.pop("attempt", 1))  # type: ignore[call-overload]
    status = job_fields.pop("status", JobStatus.COMPLETED)  # a one-off that has fired
    job: JobRecord = make_job(
        now=clock.now(),
        next_run_time=None,
        run_at=NOON,
        target=receiver.url,
        status=status,
        **job_fields,  # type: ignore[arg-type]
    )
    svc.jobs.create(job)
    record = store_execution(
        svc, make_execution(job, NOON, clock.now(), attempt=attempt), clock.now()
    )
    return record, Outgoing.of(record).message


def _get(svc: Services, record: ExecutionRecord) -> ExecutionRecord:
    return svc.executions.get(TENANT, record.execution_id)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    opened = threading.Event()
    yield opened
    opened.set()  # never leave a receiver thread blocked


def test_a_2xx_answer_succeeds_the_execution_and_records_the_attempt(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver
) -> None:
    record, message = submit(payload={"n": 1})

    outcome = worker.process(message)

    stored = _get(svc, record)
    assert (outcome.state, stored.state) == ("succeeded", ExecState.SUCCEEDED)
    assert [(a.attempt, a.outcome, a.status_code) for a in stored.attempts] == [
        (1, "succeeded", 200)
    ]
    [call] = receiver.calls
    assert json.loads(call.body) == {"n": 1}
    assert call.header("Idempotency-Key") == record.execution_id
    assert call.header("Takt-Attempt") == "1"


def test_a_success_of_an_active_job_is_noted_on_the_job(
    svc: Services, worker: Worker, submit: Submit, clock: ManualClock
) -> None:
    record, message = submit(status=JobStatus.ACTIVE)

    worker.process(message)

    job = svc.jobs.get(TENANT, record.job_id)
    assert (job.last_outcome, job.last_execution_id) == ("succeeded", record.execution_id)
    assert job.last_run_at == clock.now()


def test_a_fired_one_offs_success_is_left_in_its_history(
    svc: Services, worker: Worker, submit: Submit
) -> None:
    """Nothing noted on a completed job counts as settled: the API reads the history."""
    record, message = submit()

    worker.process(message)

    assert svc.jobs.get(TENANT, record.job_id).last_outcome is None
    newest = svc.executions.newest_ended_after(TENANT, record.job_id, None, consistent=True)
    assert newest is not None and newest.execution_id == record.execution_id


def test_a_finished_execution_leaves_the_open_index(
    svc: Services, worker: Worker, submit: Submit
) -> None:
    record, message = submit()

    worker.process(message)

    candidates = [
        item
        for shard in range(svc.executions.open_shards)
        for item in svc.executions.open_candidates(str(shard), 2**62)
    ]
    assert candidates == []
    assert _get(svc, record).state == ExecState.SUCCEEDED


def test_a_500_waits_for_a_retry_with_a_delayed_message_for_the_next_attempt(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver, clock: ManualClock
) -> None:
    receiver.fail(1, status=500)
    record, message = submit()

    outcome = worker.process(message)

    stored = _get(svc, record)
    assert (outcome.state, stored.state, stored.attempt) == ("retry_wait", ExecState.RETRY_WAIT, 2)
    assert stored.error == "HTTP 500"
    assert [(a.attempt, a.outcome) for a in stored.attempts] == [(1, "retry")]
    # Exponential backoff with full jitter after attempt 1: somewhere in [0, 5 s * 2^1].
    assert stored.retry_at is not None
    assert clock.now() <= stored.retry_at <= clock.now() + timedelta(seconds=10)
    [sent] = worker.lanes.sent
    assert (sent.message.attempt, sent.lane) == (2, "default")
    assert 0 <= sent.delay_sec <= 10
    assert (visible_count(svc), delayed_count(svc)) == (0, 1)


@pytest.mark.parametrize(("attempt", "wait"), [(1, 20), (3, 80)])
def test_a_failed_attempt_waits_the_backoff_the_formula_gives_for_its_attempt_number(
    svc: Services,
    worker: Worker,
    submit: Submit,
    receiver: Receiver,
    clock: ManualClock,
    attempt: int,
    wait: int,
) -> None:
    receiver.fail(1, status=500)
    policy = RetryPolicy(initial_interval="10s", max_interval="1h", jitter="none")
    record, message = submit(attempt=attempt, retry=policy)

    worker.process(message)

    stored = _get(svc, record)
    rule = f"attempt {attempt} failing waits 10 s * 2^{attempt} = {wait} s (the retry plan)"
    assert stored.retry_at == clock.now() + timedelta(seconds=wait), rule
    assert [o.delay_sec for o in worker.lanes.sent] == [wait], rule


def test_a_404_fails_the_execution_without_a_retry(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver
) -> None:
    receiver.fail(1, status=404)
    record, message = submit()

    outcome = worker.process(message)

    stored = _get(svc, record)
    assert (outcome.state, stored.state, stored.status_code) == ("failed", ExecState.FAILED, 404)
    assert worker.lanes.sent == []
    assert svc.jobs.get(TENANT, record.job_id).last_outcome == "failed"


def test_a_429_with_retry_after_waits_at_least_that_long(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver, clock: ManualClock
) -> None:
    receiver.script(Reply(status=429, headers={"Retry-After": "120"}))
    record, message = submit()

    worker.process(message)

    stored = _get(svc, record)
    assert stored.state == ExecState.RETRY_WAIT
    # The jittered backoff is at most 10 s here, so the wait is exactly the target's 120 s.
    assert stored.retry_at == clock.now() + timedelta(seconds=120)
    assert [o.delay_sec for o in worker.lanes.sent] == [120]


def test_a_target_slower_than_the_timeout_is_a_retryable_failure(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver
) -> None:
    receiver.script(Reply(delay_sec=3))
    record, message = submit(timeout_sec=1, retry=FIXED_30S)

    outcome = worker.process(message)

    stored = _get(svc, record)
    assert (outcome.state, stored.attempt) == ("retry_wait", 2)
    assert stored.error is not None and "timed out" in stored.error


def test_a_failure_on_the_last_attempt_is_dead(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver
) -> None:
    receiver.fail(1, status=503)
    record, message = submit(retry=RetryPolicy(max_attempts=2), attempt=2)

    outcome = worker.process(message)

    stored = _get(svc, record)
    assert (outcome.state, stored.state, stored.attempt) == ("dead", ExecState.DEAD, 2)
    assert worker.lanes.sent == []
    assert svc.jobs.get(TENANT, record.job_id).last_outcome == "dead"


def test_a_retry_succeeds_on_the_next_attempt_with_both_attempts_recorded(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver, clock: ManualClock
) -> None:
    receiver.fail(1, status=500)
    record, message = submit(retry=FIXED_30S)
    worker.process(message)
    [retry] = worker.lanes.sent
    clock.advance(retry.delay_sec)

    outcome = worker.process(retry.message)

    stored = _get(svc, record)
    assert (outcome.state, stored.attempt) == ("succeeded", 2)
    assert [(a.attempt, a.outcome) for a in stored.attempts] == [(1, "retry"), (2, "succeeded")]
    assert [c.header("Takt-Attempt") for c in receiver.calls] == ["1", "2"]


def test_a_duplicate_message_for_a_finished_attempt_does_not_call_the_target_again(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver
) -> None:
    record, message = submit()
    worker.process(message)

    again = worker.process(message)

    assert again.detail == "duplicate or stale message"
    assert len(receiver.calls) == 1
    assert len(_get(svc, record).attempts) == 1


def test_a_duplicate_message_while_the_attempt_runs_does_not_call_the_target_again(
    svc: Services, submit: Submit, receiver: Receiver, gate: threading.Event
) -> None:
    receiver.script(Reply(gate=gate))
    _, message = submit()
    first, second = Worker(svc, "w-1"), Worker(svc, "w-2")
    thread, outcomes = in_thread(lambda: first.process(message))
    receiver.wait_for_calls(1)

    duplicate = second.process(message)
    gate.set()
    thread.join(timeout=10)

    assert (duplicate.state, duplicate.detail) == ("running", "duplicate or stale message")
    assert [o.state for o in outcomes] == ["succeeded"]
    assert len(receiver.calls) == 1


def test_a_message_for_an_old_attempt_is_ignored(
    svc: Services, worker: Worker, submit: Submit, receiver: Receiver
) -> None:
    record, message = submit(attempt=2)

    outcome = worker.process(message.model_copy(update={"attempt": 1}))

    assert outcome.detail == "duplicate or stale message"
    assert receiver.calls == []
    assert _get(svc, record).state == ExecState.PENDING


def test_a_message_for_a_missing_execution_is_dropped(
    worker: Worker, submit: Submit, receiver: Receiver
) -> None:
    _, message = submit()

    outcome = worker.process(
        message.model_copy(update={"execution_id": "job_x.20260302T120000000Z"})
    )

    assert outcome.state == "missing"
    assert receiver.calls == []


def test_heartbeats_extend_the_lease_while_the_target_runs(
    make_svc: ServicesFactory, clock: ManualClock, receiver: Receiver, gate: threading.Event
) -> None:
    svc = make_svc(heartbeat_sec=0.2)
    receiver.script(Reply(gate=gate))
    record, message = _submit(svc, clock, receiver)
    thread, outcomes = in_thread(lambda: Worker(svc).process(message))
    receiver.wait_for_calls(1)
    poll_until(lambda: _get(svc, record).heartbeat_seq > 0)

    clock.advance(10)
    extended = to_ms(clock.now() + timedelta(seconds=svc.settings.lease_sec))
    poll_until(lambda: _get(svc, record).lease_expires_at == extended)
    gate.set()
    thread.join(timeout=10)

    stored = _get(svc, record)
    assert [o.state for o in outcomes] == ["succeeded"]
    assert stored.heartbeat_seq > 0


def test_a_stale_worker_completion_is_fenced_after_the_watchdog_reclaimed_its_lease(
    svc: Services,
    clock: ManualClock,
    submit: Submit,
    receiver: Receiver,
    gate: threading.Event,
    checker: HistoryChecker,
) -> None:
    receiver.script(Reply(gate=gate))  # the first worker hangs in its call
    record, message = submit(timeout_sec=30)
    stale = Worker(svc, "w-stale")
    thread, outcomes = in_thread(lambda: stale.process(message))
    receiver.wait_for_calls(1)
    leased = _get(svc, record)
    assert (leased.state, leased.worker_id) == (ExecState.RUNNING, "w-stale")

    clock.advance(svc.settings.lease_sec + svc.settings.clock_margin_sec + 1)
    assert svc.watchdog.sweep(clock.now()).lease_expired == 1
    [retry] = drain(svc)
    assert retry.attempt == 2
    fresh = Worker(svc, "w-fresh").process(retry)
    assert fresh.state == "succeeded"
    gate.set()  # the stale worker's call now returns, and it tries to complete attempt 1
    thread.join(timeout=10)

    stored = _get(svc, record)
    assert [o.state for o in outcomes] == ["fenced"]
    assert (stored.state, stored.attempt, stored.worker_id) == (
        ExecState.SUCCEEDED,
        2,
        "w-fresh",
    )
    assert stored.fenced_reports == 1
    assert [(a.attempt, a.outcome) for a in stored.attempts] == [
        (1, "lease_expired"),
        (2, "succeeded"),
    ]
    assert len(receiver.calls) == 2
    report = checker.check([Expect(record.job_id, [NOON], None)])
    assert (report.problems(), report.takt_fenced) == ([], 1)


def test_the_schedule_lag_is_measured_at_the_first_start(
    svc: Services, worker: Worker, submit: Submit, clock: ManualClock
) -> None:
    clock.set(NOON + timedelta(seconds=2))
    record, message = submit()

    worker.process(message)

    assert _get(svc, record).lag_ms == 2000
