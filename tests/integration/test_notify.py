"""Notifications, through the real worker path on moto with real receivers: an SNS topic and an
EventBridge bus each delivering to an SQS queue the test reads, and a loopback webhook whose
Standard Webhooks signature is checked. One notice per incident, however many executions die;
a success closes it (one `resolved` notice); a notice that cannot be delivered is sent again at the
next failure."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.models.lanes import Outgoing
from takt.models.notify import NotifyPolicy
from takt.models.records import ExecState, JobRecord, RetryPolicy
from takt.targets.http import sign
from takt.wiring import Services
from tests.integration.worker.conftest import NOON, runner_for
from tests.support.env import ServicesFactory
from tests.support.jobs import TENANT, make_execution, make_job, store_execution
from tests.support.receiver import Receiver, Reply

SIGNING = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ONCE = RetryPolicy(max_attempts=1)


@pytest.fixture
def target() -> Iterator[Receiver]:
    """The jobs' own target: fails (500) unless told otherwise."""
    with Receiver(Reply(status=500)) as running:
        yield running


@pytest.fixture
def hook() -> Iterator[Receiver]:
    """The notification webhook."""
    with Receiver() as running:
        yield running


@pytest.fixture
def signed(make_svc: ServicesFactory) -> Services:
    return make_svc(signing_secret=SIGNING)


def _job(svc: Services, clock: ManualClock, target: str, notify: NotifyPolicy | None) -> JobRecord:
    job = make_job(
        now=clock.now(),
        next_run_time=None,
        interval="1h",
        target=target,
        retry=ONCE,
        notify=notify,
        name="nightly-report",
    )
    svc.jobs.create(job)
    return job


def _run(svc: Services, clock: ManualClock, job: JobRecord, hour: int) -> str:
    """Run the job's occurrence `hour` hours after noon through the worker; its final state."""
    record = store_execution(
        svc, make_execution(job, NOON + timedelta(hours=hour), clock.now()), clock.now()
    )
    return runner_for(svc).process(Outgoing.of(record).message).state


def _queue(svc: Services) -> tuple[str, str]:
    url = svc.clients.sqs.create_queue(QueueName=f"ops-{uuid.uuid4().hex[:10]}")["QueueUrl"]
    arn = svc.clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    return url, arn


def _drain(svc: Services, url: str) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    while True:
        got = svc.clients.sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", [])
        if not got:
            return bodies
        for message in got:
            bodies.append(json.loads(message["Body"]))
            svc.clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def _topic_to_queue(svc: Services) -> tuple[str, str]:
    """An SNS topic delivering raw messages to a fresh queue: (topic ARN, queue URL)."""
    url, queue_arn = _queue(svc)
    topic = svc.clients.sns.create_topic(Name=f"ops-{uuid.uuid4().hex[:10]}")["TopicArn"]
    svc.clients.sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    return topic, url


def test_an_sns_topic_gets_one_notice_per_incident_and_one_when_a_success_resolves_it(
    svc: Services, clock: ManualClock, target: Receiver
) -> None:
    topic, inbox = _topic_to_queue(svc)
    job = _job(svc, clock, target.url, NotifyPolicy(to=topic, on=["dead"]))

    states = [_run(svc, clock, job, hour) for hour in range(3)]
    opened = _drain(svc, inbox)
    target.script(Reply(status=200))
    resolved_by = _run(svc, clock, job, 3)
    resolved = _drain(svc, inbox)
    again = _run(svc, clock, job, 4)
    reopened = _drain(svc, inbox)

    assert states == ["dead", "dead", "dead"]
    [notice] = opened
    first = f"{job.job_id}.{(NOON).strftime('%Y%m%dT%H%M%S')}000Z.dead"
    assert notice == {
        "type": "takt.incident.opened",
        "incident_id": first,
        "kind": "dead",
        "tenant_id": TENANT,
        "job_id": job.job_id,
        "job_name": "nightly-report",
        "execution_id": first.removesuffix(".dead"),
        "state": "dead",
        "error": "HTTP 500",
        "failure_streak": 1,
        "at": notice["at"],
    }
    assert resolved_by == ExecState.SUCCEEDED.value
    assert [(n["type"], n["incident_id"]) for n in resolved] == [("takt.incident.resolved", first)]
    assert again == "dead"
    assert [(n["type"], n["failure_streak"]) for n in reopened] == [("takt.incident.opened", 1)]


def test_an_execution_s_retried_attempts_send_nothing_and_its_death_one_notice(
    svc: Services, clock: ManualClock, target: Receiver, hook: Receiver
) -> None:
    retried = RetryPolicy(max_attempts=3, backoff="fixed", initial_interval="1s", jitter="none")
    job = make_job(
        now=clock.now(),
        next_run_time=None,
        interval="1h",
        target=target.url,
        retry=retried,
        notify=NotifyPolicy(to=hook.url, on=["dead"]),
    )
    svc.jobs.create(job)
    record = store_execution(svc, make_execution(job, NOON, clock.now()), clock.now())
    message = Outgoing.of(record).message
    runner = runner_for(svc)

    states = []
    heard = []
    for attempt in (1, 2, 3):
        states.append(runner.process(message.model_copy(update={"attempt": attempt})).state)
        heard.append(len(hook.calls))
        clock.advance(1)

    assert states == ["retry_wait", "retry_wait", "dead"]
    assert len(target.calls) == 3
    # Nothing while the execution is retried; one notice when its last attempt fails.
    assert heard == [0, 0, 1]
    assert json.loads(hook.calls[0].body)["execution_id"] == record.execution_id


def test_an_eventbridge_bus_hears_that_a_job_stopped_after_its_nth_failure_in_a_row(
    svc: Services, clock: ManualClock, target: Receiver
) -> None:
    inbox, queue_arn = _queue(svc)
    bus = svc.clients.events.create_event_bus(Name=f"ops-{uuid.uuid4().hex[:10]}")["EventBusArn"]
    rule = f"incidents-{uuid.uuid4().hex[:8]}"
    svc.clients.events.put_rule(
        Name=rule, EventBusName=bus, EventPattern=json.dumps({"source": ["takt"]})
    )
    svc.clients.events.put_targets(
        Rule=rule, EventBusName=bus, Targets=[{"Id": "inbox", "Arn": queue_arn}]
    )
    job = _job(svc, clock, target.url, NotifyPolicy(to=bus, on=["stopped"], after_failures=3))

    after_two = [_run(svc, clock, job, hour) for hour in range(2)]
    quiet = _drain(svc, inbox)
    after_five = [_run(svc, clock, job, hour) for hour in range(2, 5)]
    events = _drain(svc, inbox)

    assert after_two == ["dead", "dead"]
    assert quiet == []
    assert after_five == ["dead", "dead", "dead"]
    [event] = events
    assert (event["source"], event["detail-type"]) == ("takt", "takt.incident.opened")
    assert (event["detail"]["kind"], event["detail"]["failure_streak"]) == ("stopped", 3)


def test_a_webhook_notice_is_signed_like_a_target_call_and_sent_once(
    signed: Services, clock: ManualClock, target: Receiver, hook: Receiver
) -> None:
    target.fail(1, status=400)
    job = _job(signed, clock, target.url, NotifyPolicy(to=hook.url, on=["dead"]))

    states = [_run(signed, clock, job, hour) for hour in range(2)]

    [call] = hook.calls
    notice = json.loads(call.body)
    incident = notice["incident_id"]
    timestamp = int(call.header("webhook-timestamp") or 0)
    assert states == ["failed", "dead"]
    assert (notice["type"], notice["state"], notice["error"]) == (
        "takt.incident.opened",
        "failed",
        "HTTP 400",
    )
    assert call.header("webhook-id") == incident
    # Signed with the tenant's key, derived from the deployment's master, as a target call is.
    [key] = signed.webhook_keys.signing_keys(TENANT, clock.now())
    assert call.header("webhook-signature") == sign(key, incident, timestamp, call.body)


def test_a_notice_the_webhook_refused_is_sent_again_at_the_next_failure(
    signed: Services, clock: ManualClock, target: Receiver, hook: Receiver
) -> None:
    hook.fail(1, status=503)
    job = _job(signed, clock, target.url, NotifyPolicy(to=hook.url, on=["dead"]))

    first = _run(signed, clock, job, 0)
    second = _run(signed, clock, job, 1)
    third = _run(signed, clock, job, 2)

    calls = [json.loads(c.body)["execution_id"] for c in hook.calls]
    assert (first, second, third) == ("dead", "dead", "dead")
    # The first notice was refused, so the second failure opened the incident again; the third
    # found it open.
    assert len(calls) == 2
    assert calls[0] != calls[1]


def test_the_tenants_default_applies_unless_the_job_opts_out(
    make_svc: ServicesFactory, clock: ManualClock, target: Receiver, hook: Receiver
) -> None:
    svc = make_svc(notify_defaults={TENANT: {"to": hook.url, "on": ["dead"]}})
    by_default = _job(svc, clock, target.url, None)
    opted_out = _job(svc, clock, target.url, NotifyPolicy(to=hook.url, on=[]))

    _run(svc, clock, by_default, 0)
    _run(svc, clock, opted_out, 0)

    assert [json.loads(c.body)["job_id"] for c in hook.calls] == [by_default.job_id]


def test_only_one_of_two_writers_opens_an_incident(svc: Services, clock: ManualClock) -> None:
    job = _job(svc, clock, "https://svc.example/hook", None)

    first = svc.jobs.open_incident(TENANT, job.job_id, "dead", "a")
    second = svc.jobs.open_incident(TENANT, job.job_id, "dead", "b")

    assert (first, second) == (True, False)
