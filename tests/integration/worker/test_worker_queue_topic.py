"""Queue-topic targets on moto: the payload arrives with takt's attributes, FIFO targets
deduplicate on the execution id, refusals are permanent, and a slow publish times out."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from takt.api.errors import InvalidRequestError
from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.clock import ManualClock
from takt.models.calls import CallContext
from takt.models.ids import format_time
from takt.models.records import ExecState, RetryPolicy
from takt.wiring import Services
from tests.integration.worker.conftest import NOON, runner_for, stored, submit_to
from tests.support.jobs import TENANT

ACCOUNT = "123456789012"
FIXED = RetryPolicy(backoff="fixed", initial_interval="30s", jitter="none")


def _queue(svc: Services, *, fifo: bool = False) -> tuple[str, str]:
    """A fresh queue: (URL, ARN)."""
    name = f"sink-{uuid.uuid4().hex[:10]}" + (".fifo" if fifo else "")
    url = svc.clients.sqs.create_queue(
        QueueName=name, Attributes={"FifoQueue": "true"} if fifo else {}
    )["QueueUrl"]
    arn = svc.clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    return url, arn


def _received(svc: Services, url: str) -> list[Any]:
    resp = svc.clients.sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        WaitTimeSeconds=0,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["MessageGroupId", "MessageDeduplicationId"],
    )
    return list(resp.get("Messages", []))


def _attributes(message: dict[str, Any]) -> dict[str, str]:
    return {k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}


def test_a_queue_named_by_arn_gets_the_payload_with_the_execution_as_attributes(
    svc: Services, clock: ManualClock
) -> None:
    url, arn = _queue(svc)
    record, message = submit_to(svc, clock, arn, {"report": "daily"})

    outcome = runner_for(svc).process(message)

    [sent] = _received(svc, url)
    assert outcome.state == "succeeded"
    assert json.loads(sent["Body"]) == {"report": "daily"}
    assert _attributes(sent) == {
        "takt-job-id": record.job_id,
        "takt-execution-id": record.execution_id,
        "takt-attempt": "1",
        "takt-scheduled-time": format_time(NOON),
    }


def test_a_queue_named_by_its_aws_url_is_reached_too(svc: Services, clock: ManualClock) -> None:
    url, _ = _queue(svc)
    name = url.rsplit("/", 1)[-1]
    _, message = submit_to(svc, clock, f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/{name}", 7)

    outcome = runner_for(svc).process(message)

    assert outcome.state == "succeeded"
    assert [m["Body"] for m in _received(svc, url)] == ["7"]


def test_a_fifo_queue_keeps_one_message_per_execution_however_often_it_is_published(
    svc: Services, clock: ManualClock
) -> None:
    url, arn = _queue(svc, fifo=True)
    record, message = submit_to(svc, clock, arn, {"n": 1})
    runner_for(svc).process(message)
    retry = CallContext(
        job_id=record.job_id,
        execution_id=record.execution_id,
        attempt=2,
        scheduled_time=NOON,
        payload={"n": 1},
        timeout_sec=10,
    )

    again = svc.targets.call(arn, retry)

    [sent] = _received(svc, url)
    assert again.outcome == "success"
    assert sent["Attributes"] == {
        "MessageGroupId": record.job_id,
        "MessageDeduplicationId": record.execution_id,
    }
    assert _attributes(sent)["takt-attempt"] == "1"


def test_a_topic_delivers_the_payload_and_attributes_to_its_subscribers(
    svc: Services, clock: ManualClock
) -> None:
    url, queue_arn = _queue(svc)
    topic = svc.clients.sns.create_topic(Name=f"events-{uuid.uuid4().hex[:10]}")["TopicArn"]
    svc.clients.sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    record, message = submit_to(svc, clock, topic, {"event": "closed"})

    outcome = runner_for(svc).process(message)

    [sent] = _received(svc, url)
    assert outcome.state == "succeeded"
    assert json.loads(sent["Body"]) == {"event": "closed"}
    assert _attributes(sent)["takt-execution-id"] == record.execution_id


def test_a_fifo_topic_is_published_with_the_job_as_group_and_the_execution_as_dedup_id(
    svc: Services, clock: ManualClock
) -> None:
    url, queue_arn = _queue(svc, fifo=True)
    topic = svc.clients.sns.create_topic(
        Name=f"events-{uuid.uuid4().hex[:10]}.fifo", Attributes={"FifoTopic": "true"}
    )["TopicArn"]
    svc.clients.sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    record, message = submit_to(svc, clock, topic, {"event": "closed"})

    outcome = runner_for(svc).process(message)

    [sent] = _received(svc, url)
    assert outcome.state == "succeeded"
    assert sent["Attributes"]["MessageGroupId"] == record.job_id


def test_an_event_bus_gets_the_execution_and_payload_in_the_events_detail(
    svc: Services, clock: ManualClock
) -> None:
    url, queue_arn = _queue(svc)
    name = f"bus-{uuid.uuid4().hex[:10]}"
    bus = svc.clients.events.create_event_bus(Name=name)["EventBusArn"]
    svc.clients.events.put_rule(
        Name=f"to-{name}", EventBusName=name, EventPattern=json.dumps({"source": ["takt"]})
    )
    svc.clients.events.put_targets(
        Rule=f"to-{name}", EventBusName=name, Targets=[{"Id": "sink", "Arn": queue_arn}]
    )
    record, message = submit_to(svc, clock, bus, {"order": 42})

    outcome = runner_for(svc).process(message)

    [sent] = _received(svc, url)
    event = json.loads(sent["Body"])
    assert outcome.state == "succeeded"
    assert (event["source"], event["detail-type"]) == ("takt", "takt.execution")
    assert event["detail"] == {
        "job_id": record.job_id,
        "execution_id": record.execution_id,
        "attempt": 1,
        "scheduled_time": format_time(NOON),
        "payload": {"order": 42},
    }


def test_a_queue_that_does_not_exist_fails_the_execution_without_a_retry(
    svc: Services, clock: ManualClock
) -> None:
    record, message = submit_to(svc, clock, f"arn:aws:sqs:us-east-1:{ACCOUNT}:no-such-queue")

    outcome = runner_for(svc).process(message)

    after = stored(svc, record)
    assert (outcome.state, after.state) == ("failed", ExecState.FAILED)
    assert after.error is not None and "NonExistentQueue" in after.error


def test_a_target_in_another_region_is_refused_at_create_and_failed_if_stored(
    svc: Services, clock: ManualClock
) -> None:
    elsewhere = f"arn:aws:sns:eu-west-1:{ACCOUNT}:events"
    record, message = submit_to(svc, clock, elsewhere)

    with pytest.raises(InvalidRequestError) as refused:
        JobService(svc.api).create(TENANT, JobCreate(interval="1h", target=elsewhere), None)
    outcome = runner_for(svc).process(message)

    assert refused.value.errors == [
        {
            "field": "target",
            "message": "target is in eu-west-1; this deployment publishes in us-east-1",
        }
    ]
    assert (outcome.state, stored(svc, record).state) == ("failed", ExecState.FAILED)


@pytest.fixture
def stalled_send(svc: Services) -> Iterator[threading.Event]:
    """Every SendMessage on the shared SQS client hangs until the returned event is set."""
    release = threading.Event()

    def hang(**_: Any) -> None:
        release.wait(30)

    events = svc.clients.sqs.meta.events
    events.register("before-send.sqs.SendMessage", hang)
    try:
        yield release
    finally:
        events.unregister("before-send.sqs.SendMessage", hang)
        release.set()


def test_a_publish_slower_than_the_timeout_is_a_retryable_failure(
    svc: Services, clock: ManualClock, stalled_send: threading.Event
) -> None:
    _, arn = _queue(svc)
    record, message = submit_to(svc, clock, arn, {"n": 1}, timeout_sec=1, retry=FIXED)

    outcome = runner_for(svc).process(message)

    after = stored(svc, record)
    assert (outcome.state, after.attempt, after.error) == ("retry_wait", 2, "timed out after 1s")
