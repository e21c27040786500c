"""Which kind of target a stored `target` string names, and which strings are refused."""

from __future__ import annotations

import pytest

from takt.models.targets import (
    EventBusSpec,
    HandlerSpec,
    HttpSpec,
    LambdaSpec,
    SnsSpec,
    SqsSpec,
    StateMachineSpec,
    TargetSpec,
    handler_name,
    parse_target,
)

ACCOUNT = "123456789012"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://svc.example/hook", HttpSpec("https://svc.example/hook")),
        ("http://127.0.0.1:9001/", HttpSpec("http://127.0.0.1:9001/")),
        ("handler:send_report", HandlerSpec("send_report")),
        ("handler:billing.close-month_v2", HandlerSpec("billing.close-month_v2")),
        (
            f"arn:aws:sqs:us-east-1:{ACCOUNT}:jobs",
            SqsSpec(region="us-east-1", account=ACCOUNT, name="jobs"),
        ),
        (
            f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/jobs.fifo",
            SqsSpec(
                region="eu-west-1",
                account=ACCOUNT,
                name="jobs.fifo",
                url=f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/jobs.fifo",
            ),
        ),
        (
            f"https://us-east-2.queue.amazonaws.com/{ACCOUNT}/legacy",
            SqsSpec(
                region="us-east-2",
                account=ACCOUNT,
                name="legacy",
                url=f"https://us-east-2.queue.amazonaws.com/{ACCOUNT}/legacy",
            ),
        ),
        (
            f"arn:aws:sns:us-east-1:{ACCOUNT}:events",
            SnsSpec(arn=f"arn:aws:sns:us-east-1:{ACCOUNT}:events", region="us-east-1"),
        ),
        (
            f"arn:aws:events:ap-southeast-2:{ACCOUNT}:event-bus/orders",
            EventBusSpec(
                arn=f"arn:aws:events:ap-southeast-2:{ACCOUNT}:event-bus/orders",
                region="ap-southeast-2",
            ),
        ),
        (
            f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:report",
            LambdaSpec(f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:report", "us-east-1"),
        ),
        (
            f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:report:$LATEST",
            LambdaSpec(f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:report:$LATEST", "us-east-1"),
        ),
        (
            f"arn:aws:states:eu-west-1:{ACCOUNT}:stateMachine:orders",
            StateMachineSpec(
                f"arn:aws:states:eu-west-1:{ACCOUNT}:stateMachine:orders", "eu-west-1"
            ),
        ),
    ],
)
def test_each_string_form_names_its_kind_of_target(text: str, expected: TargetSpec) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ftp://svc/x",
        "file:///etc/passwd",
        "http://",
        "handler:",
        "handler:9starts_with_a_digit",
        "handler:has space",
        "handler:" + "x" * 129,
        f"arn:aws:lambda:us-east-1:{ACCOUNT}:layer:f",
        f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:has.dot",
        f"arn:aws:states:us-east-1:{ACCOUNT}:execution:m:run-1",
        f"arn:aws:sqs:us-east-1:{ACCOUNT}:bad/name",
        f"arn:aws:sns:us-east-1:{ACCOUNT}:topic:0f2c-subscription",
        f"arn:aws:events:us-east-1:{ACCOUNT}:rule/nightly",
        "arn:aws:sqs:us-east-1:12345:short-account",
        f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}",
        "send_report",
    ],
)
def test_a_string_no_worker_can_call_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        parse_target(text)


def test_fifo_is_read_from_the_queue_or_topic_name() -> None:
    assert parse_target(f"arn:aws:sqs:us-east-1:{ACCOUNT}:q.fifo") == SqsSpec(
        region="us-east-1", account=ACCOUNT, name="q.fifo"
    )
    queue = parse_target(f"arn:aws:sqs:us-east-1:{ACCOUNT}:q.fifo")
    topic = parse_target(f"arn:aws:sns:us-east-1:{ACCOUNT}:t")
    assert isinstance(queue, SqsSpec) and queue.fifo
    assert isinstance(topic, SnsSpec) and not topic.fifo


def test_handler_name_reads_only_handler_targets() -> None:
    assert handler_name("handler:send_report") == "send_report"
    assert handler_name("https://svc/handler:x") is None
