"""The `target` field of a job: string forms, object forms stored as strings, refusals."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from takt.api.models import JobCreate, JobPatch
from takt.api.service import body_hash

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:jobs"
TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:events"
BUS_ARN = "arn:aws:events:us-east-1:123456789012:event-bus/orders"


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
    ],
)
def test_a_bad_target_blames_the_target_field(target: Any, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        JobCreate.model_validate({"interval": "1h", "target": target})

    [error] = caught.value.errors()
    assert error["loc"] == ("target",)
    assert message in error["msg"]


def test_the_openapi_schema_documents_the_string_and_every_object_form() -> None:
    field = JobCreate.model_json_schema()["properties"]["target"]
    # The target or null: a workflow has `tasks` instead.
    [schema] = [option for option in field["anyOf"] if "anyOf" in option]
    assert {"type": "null"} in field["anyOf"]

    kinds = [
        option["properties"]["type"]["const"]
        for option in schema["anyOf"]
        if "properties" in option
    ]
    assert {"type": "string"} in schema["anyOf"]
    assert kinds == ["http", "handler", "sqs", "sns", "eventbridge"]
