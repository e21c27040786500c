"""The watchdog dying between two of its steps loses nothing: the next sweep finishes the work.

Each action that makes an execution runnable again is a write and then a message (`expire`: the
next attempt; `release_retry`: a retry whose wait outlasted SQS's delays). A sweep that dies
between them leaves the execution runnable in the table with no message: the write must keep it
in the `open` index with a check time, so a later sweep finds it and sends it (DESIGN invariant
1). A cancel acknowledged between the watchdog's read and its release wins: the release is fenced
on the state it read, so the cancelled execution never runs (issue 28's blind classes).

An expired lease on the last attempt is a write (`dead`) and then what follows the end (the job's
note, its failure streak, its incident's notice). A sweep that dies between them leaves the
execution marked `follow_up` in the `open` index, and the next sweep does the rest exactly once:
the job's outcome and streak read with plain boto3, the notice read from the SNS topic's queue.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Literal

import pytest

from takt.api.executions import ExecutionService
from takt.clock import ManualClock
from takt.models.ids import format_time, to_ms
from takt.models.notify import NotifyPolicy
from takt.models.records import ExecState, ExecutionRecord, JobRecord, RetryPolicy
from takt.store.executions import Transition
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring import Services
from tests.support.faults import Crash, crash_on, interleave
from tests.support.jobs import TENANT, make_execution, make_job, store_execution
from tests.support.lanes import drain

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
NOTHING_LOST = "a watchdog dying between its write and its message loses nothing (invariant 1)"
CANCEL_WINS = "a cancel acknowledged before the watchdog's release wins: nothing runs after it"
NOTE_KEPT = (
    "a watchdog dying between an execution's dead write and its note leaves the note, the "
    "streak and the notice to the next sweep, done once (issue 28, invariant 1)"
)


@pytest.fixture
def job(svc: Services, clock: ManualClock) -> JobRecord:
    job = make_job(
        now=clock.now(), next_run_time=None, run_at=NOON, retry=RetryPolicy(max_attempts=3)
    )
    svc.jobs.create(job)
    return job


def _leased_and_expired(svc: Services, job: JobRecord, clock: ManualClock) -> ExecutionRecord:
    """A running attempt 1 whose worker died: its lease is past its expiry and the margin."""
    record = store_execution(svc, make_execution(job, NOON, clock.now()), clock.now())
    expires = to_ms(clock.now() + timedelta(seconds=svc.settings.lease_sec))
    svc.executions.transition(
        TENANT,
        record.execution_id,
        Transition(
            expect={"state": ExecState.PENDING, "attempt": 1},
            set={
                "state": ExecState.RUNNING,
                "lease_token": uuid.uuid4().hex,
                "worker_id": "w-dead",
                "lease_expires_at": expires,
                "check_at": expires,
                "started_at": format_time(clock.now()),
            },
        ),
    )
    clock.advance(svc.settings.lease_sec + svc.settings.clock_margin_sec + 0.5)
    return record


def _retry_due(svc: Services, job: JobRecord, clock: ManualClock) -> ExecutionRecord:
    """Attempt 2 waiting in the table (a wait past SQS's 900 s), its retry time just passed."""
    record = store_execution(svc, make_execution(job, NOON, clock.now()), clock.now())
    retry_at = clock.now() + timedelta(hours=1)
    svc.executions.transition(
        TENANT,
        record.execution_id,
        Transition(
            expect={"state": ExecState.PENDING, "attempt": 1},
            set={
                "state": ExecState.RETRY_WAIT,
                "attempt": 2,
                "retry_at": format_time(retry_at),
                "check_at": to_ms(retry_at),
            },
        ),
    )
    clock.set(retry_at + timedelta(seconds=svc.settings.clock_margin_sec + 0.5))
    return record


def _watchdog(svc: Services, **parts: object) -> Watchdog:
    chosen = {"jobs": svc.jobs, "executions": svc.executions, "lanes": svc.lanes, **parts}
    return Watchdog(
        WatchdogSettings.of(svc.settings),
        chosen["jobs"],  # type: ignore[arg-type]
        svc.due,
        chosen["executions"],  # type: ignore[arg-type]
        chosen["lanes"],  # type: ignore[arg-type]
        notifier=svc.notifier,
    )


@pytest.mark.parametrize("case", ["expired-lease", "retry-due"])
def test_a_watchdog_dying_between_its_write_and_its_message_is_finished_by_the_next_sweep(
    svc: Services, clock: ManualClock, job: JobRecord, case: str
) -> None:
    if case == "expired-lease":
        record = _leased_and_expired(svc, job, clock)
    else:
        record = _retry_due(svc, job, clock)

    with pytest.raises(Crash):
        _watchdog(svc, lanes=crash_on(svc.lanes, "send", when="before")).sweep(clock.now())
    left = svc.executions.get(TENANT, record.execution_id)
    assert (left.state, left.attempt, drain(svc)) == (ExecState.PENDING, 2, [])

    # The next sweeps, up to a resend wait (and the margin) later, send attempt 2.
    sent = []
    for _ in range(3):
        clock.advance(svc.settings.pending_resend_after_sec / 2 + svc.settings.clock_margin_sec)
        _watchdog(svc).sweep(clock.now())
        sent += [(m.execution_id, m.attempt) for m in drain(svc)]

    assert sent[:1] == [(record.execution_id, 2)], NOTHING_LOST


def test_a_cancel_landing_between_the_watchdogs_read_and_its_retry_release_wins(
    svc: Services, clock: ManualClock, job: JobRecord
) -> None:
    record = _retry_due(svc, job, clock)
    acknowledged: list[ExecutionRecord] = []

    def cancel() -> None:
        if not acknowledged:
            acknowledged.append(
                ExecutionService(svc.api).cancel_execution(TENANT, record.execution_id)
            )

    result = _watchdog(svc, executions=interleave(svc.executions, "get", cancel)).sweep(clock.now())

    assert [a.state for a in acknowledged] == [ExecState.CANCELLED]
    assert result.retries_released == 0, CANCEL_WINS
    assert svc.executions.get(TENANT, record.execution_id).state == ExecState.CANCELLED, CANCEL_WINS
    assert drain(svc) == [], CANCEL_WINS


def _topic_inbox(svc: Services) -> tuple[str, str]:
    """An SNS topic delivering raw messages to a fresh SQS queue: (topic ARN, queue URL)."""
    sqs = svc.clients.sqs
    url = sqs.create_queue(QueueName=f"ops-{uuid.uuid4().hex[:10]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    topic = svc.clients.sns.create_topic(Name=f"ops-{uuid.uuid4().hex[:10]}")["TopicArn"]
    svc.clients.sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=arn["QueueArn"],
        Attributes={"RawMessageDelivery": "true"},
    )
    return topic, url


def _notices(svc: Services, url: str) -> list[tuple[str, str, int]]:
    """The notices the topic delivered so far, as (type, incident, failure streak), each taken
    off the queue."""
    got = svc.clients.sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0
    ).get("Messages", [])
    for message in got:
        svc.clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    bodies = [json.loads(message["Body"]) for message in got]
    return [(body["type"], body["incident_id"], body["failure_streak"]) for body in bodies]


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_watchdog_dying_between_a_dead_write_and_the_jobs_note_leaves_it_to_the_next_sweep(
    svc: Services, clock: ManualClock, when: Literal["before", "after"]
) -> None:
    topic, inbox = _topic_inbox(svc)
    last = make_job(
        now=clock.now(),
        next_run_time=None,
        run_at=NOON,
        retry=RetryPolicy(max_attempts=1),
        notify=NotifyPolicy(to=topic, on=["dead"]),
    )
    svc.jobs.create(last)
    record = _leased_and_expired(svc, last, clock)
    dies = crash_on(svc.jobs, "record_outcome", when=when)

    with pytest.raises(Crash):
        _watchdog(svc, jobs=dies).sweep(clock.now())
    assert svc.executions.get(TENANT, record.execution_id).state == ExecState.DEAD
    assert _notices(svc, inbox) == [], "the sweep died before notifying"

    for _ in range(3):
        clock.advance(svc.settings.clock_margin_sec + 1)
        _watchdog(svc).sweep(clock.now())

    db = svc.clients.dynamodb
    job_item = db.get_item(
        TableName=svc.settings.jobs_table,
        Key={"tenant_id": {"S": TENANT}, "job_id": {"S": last.job_id}},
        ConsistentRead=True,
    )["Item"]
    execution_item = db.get_item(
        TableName=svc.settings.executions_table,
        Key=svc.executions.key(TENANT, record.execution_id),
        ConsistentRead=True,
    )["Item"]
    read = (("last_execution_id", "S"), ("last_outcome", "S"), ("failure_streak", "N"))
    noted = tuple(job_item.get(attr, {}).get(kind) for attr, kind in read)
    assert noted == (record.execution_id, "dead", "1"), NOTE_KEPT
    opened = ("takt.incident.opened", f"{record.execution_id}.dead", 1)
    assert _notices(svc, inbox) == [opened], NOTE_KEPT
    left = {"open_shard", "check_at", "follow_up"} & execution_item.keys()
    assert (execution_item["state"]["S"], left) == ("dead", set()), NOTE_KEPT
