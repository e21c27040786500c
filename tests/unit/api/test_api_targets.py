"""The `target` field of a job: string forms, object forms stored as strings, refusals."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from takt.api.jobs import body_hash
from takt.api.models import JobCreate, JobPatch
from takt.models.target_forms import TARGET_PATTERN

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:jobs"
TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:events"
BUS_ARN = "arn:aws:events:us-east-1:123456789012:event-bus/orders"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:report"
MACHINE_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"
API_URL = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/hook"


@pytest.mark.parametrize(
    ("target", "stored"),
    [
        ("https://svc/hook", "https://svc/hook"),
        ({"type": "http", "url": "https://svc/hook"}, "https://svc/hook"),
        ("handler:send_report", "handler:send_report"),
        ({"type": "handler", "name": "send_report"}, "handler:send_report"),
        (QUEUE_ARN, QUEUE_ARN),
        ({"type": "sqs", "queue": QUEUE_ARN}, QUEUE_ARN),
        ({"type": "sns", "topic": TOPIC_ARN}, TOPIC_ARN),
        ({"type": "eventbridge", "bus": BUS_ARN}, BUS_ARN),
        (FUNCTION_ARN, FUNCTION_ARN),
        ({"type": "lambda", "function": FUNCTION_ARN}, FUNCTION_ARN),
        (
            {"type": "lambda", "function": FUNCTION_ARN + ":live", "invocation": "Event"},
            '{"function":"' + FUNCTION_ARN + ':live","invocation":"Event","type":"lambda"}',
        ),
        ({"type": "stepfunctions", "state_machine": MACHINE_ARN}, MACHINE_ARN),
        ({"type": "http", "url": "https://svc/hook", "method": "POST"}, "https://svc/hook"),
        (
            {"type": "http", "url": "https://svc/hook", "method": "PUT", "headers": {"X-B": "2"}},
            '{"headers":{"X-B":"2"},"method":"PUT","type":"http","url":"https://svc/hook"}',
        ),
        (
            {"type": "http", "url": API_URL, "auth": {"sigv4": {}}},
            '{"auth":{"sigv4":{"region":"eu-west-1","service":"execute-api"}},"type":"http",'
            f'"url":"{API_URL}"}}',
        ),
        (
            {"type": "http", "url": "https://svc/hook", "auth": {"oidc": {}}},
            '{"auth":{"oidc":{"audience":"https://svc/hook"}},"type":"http",'
            '"url":"https://svc/hook"}',
        ),
        (
            '{"url":"https://svc/hook","type":"http","method":"DELETE"}',
            '{"method":"DELETE","type":"http","url":"https://svc/hook"}',
        ),
    ],
)
def test_every_form_is_stored_as_its_string(target: Any, stored: str) -> None:
    assert JobCreate(interval="1h", target=target).target == stored
    assert JobPatch(target=target).target == stored


def test_both_forms_of_one_target_hash_alike_for_idempotency() -> None:
    as_text = JobCreate(interval="1h", target="handler:send_report")
    as_object = JobCreate(interval="1h", target={"type": "handler", "name": "send_report"})

    assert body_hash(as_text.model_dump(mode="json")) == body_hash(
        as_object.model_dump(mode="json")
    )


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("ftp://svc", "target must be an http(s) URL, handler:NAME"),
        ("handler:no spaces", "a handler name starts with a letter"),
        ({"type": "handler"}, "target object: name: Field required"),
        ({"type": "smtp", "to": "a@b"}, "target object: Input tag 'smtp'"),
        ({"type": "sqs", "queue": "https://svc/hook"}, "not a sqs target"),
        ({"type": "sns", "topic": QUEUE_ARN}, "not a sns target"),
        ({"type": "handler", "name": "x", "extra": 1}, "target object: extra: Extra inputs"),
        ({"type": "lambda", "function": TOPIC_ARN}, "function is a Lambda function ARN"),
        ({"type": "lambda", "function": FUNCTION_ARN, "invocation": "DryRun"}, "invocation"),
        ("arn:aws:lambda:us-east-1:123456789012:layer:x", "a Lambda target is a function ARN"),
        ({"type": "stepfunctions", "state_machine": FUNCTION_ARN}, "not a stepfunctions target"),
        ({"type": "http", "url": "https://svc/h", "method": "TRACE"}, "target object: method"),
        *(
            ({"type": "http", "url": "https://svc/h", "headers": headers}, message)
            for headers, message in (
                ({"Connection": "close"}, "'Connection' is a header takt or the connection"),
                ({"Transfer-Encoding": "chunked"}, "'Transfer-Encoding' is a header takt"),
                ({"Upgrade": "h2c"}, "'Upgrade' is a header takt"),
                ({"Host": "evil.test"}, "'Host' is a header takt"),
                ({"Takt-Attempt": "9"}, "'Takt-Attempt' is a header takt"),
                ({"webhook-signature": "v1,x"}, "'webhook-signature' is a header takt"),
                ({"X-A": "one\r\nX-B: two"}, "header 'X-A' has a line break"),
                ({"X-A": "caf\u00e9"}, "non-ASCII character"),
                ({"X-A": "v" * 1025}, "header 'X-A' is longer than 1024 characters"),
                ({"Bad Name": "v"}, "'Bad Name' is not a header name"),
                ({"Authorization": "Basic eA=="}, "'Authorization' carries credentials"),
                ({"X-Amz-Date": "x"}, "'X-Amz-Date' carries credentials"),
                ({"x-a": "1", "X-A": "2"}, "a header is named twice"),
                ({f"X-{i}": "v" for i in range(21)}, "at most 20"),
                ({f"X-{i}": "v" * 1000 for i in range(9)}, "at most 8192 characters together"),
            )
        ),
        (
            {"type": "http", "url": "https://svc/h", "auth": {"sigv4": {}}},
            "sigv4 needs a service and a region unless the host names them",
        ),
        (
            {"type": "http", "url": API_URL.replace("https", "http"), "auth": {"sigv4": {}}},
            "a SigV4-signed target is https",
        ),
        (
            {"type": "http", "url": API_URL, "auth": {"sigv4": {"region": "Mars"}}},
            "sigv4.region is an AWS region",
        ),
        (
            {
                "type": "http",
                "url": "https://dynamodb.us-east-1.amazonaws.com/",
                "auth": {"sigv4": {"service": "dynamodb", "region": "us-east-1"}},
            },
            "sigv4.service is one of execute-api, lambda",
        ),
        (
            {"type": "http", "url": API_URL, "auth": {"sigv4": {}, "bearer_secret": "takt/t/x"}},
            "at most one of bearer_secret, sigv4 and oidc",
        ),
        (
            {"type": "http", "url": "https://svc/h", "auth": {"oidc": {"audience": ""}}},
            "oidc.audience is a string of 1 to 512 characters",
        ),
    ],
)
def test_a_bad_target_blames_the_target_field(target: Any, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        JobCreate.model_validate({"interval": "1h", "target": target})

    [error] = caught.value.errors()
    assert error["loc"] == ("target",)
    assert message in error["msg"]


def test_the_openapi_schema_documents_the_string_and_every_object_form() -> None:
    schema = JobCreate.model_json_schema()["properties"]["target"]
    # Never null: a workflow leaves `target` out and has `tasks` instead.
    assert {"type": "null"} not in schema["anyOf"]

    kinds = [
        option["properties"]["type"]["const"]
        for option in schema["anyOf"]
        if "properties" in option
    ]
    string = {"type": "string", "format": "takt-target", "pattern": TARGET_PATTERN}
    assert string in schema["anyOf"]
    assert kinds == [
        "http",
        "handler",
        "sqs",
        "sns",
        "eventbridge",
        "lambda",
        "stepfunctions",
        "container",
    ]
