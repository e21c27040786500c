"""The job API with the new target kinds: object forms stored as strings, refusals as 400
problems naming `target`, and nothing written for a refused job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from takt.wiring import Services, install
from tests.api.harness import PROBLEM_JSON, Api, store_snapshot


@pytest.fixture
def api(svc: Services) -> Iterator[Api]:
    install(svc)
    try:
        yield Api(svc)
    finally:
        install(None)


@pytest.mark.parametrize(
    ("target", "stored"),
    [
        ({"type": "handler", "name": "send_report"}, "handler:send_report"),
        (
            {"type": "eventbridge", "bus": "arn:aws:events:us-east-1:123456789012:event-bus/b"},
            "arn:aws:events:us-east-1:123456789012:event-bus/b",
        ),
    ],
)
def test_an_object_target_is_created_and_returned_as_its_string(
    api: Api, target: dict[str, str], stored: str
) -> None:
    job = api.created_job({"interval": "1h", "target": target})

    assert job["target"] == stored
    assert api.request("GET", f"/v1/jobs/{job['id']}").json["target"] == stored


@pytest.mark.parametrize(
    "target",
    [
        {"type": "handler"},
        {"type": "sqs", "queue": "https://svc.example/hook"},
        "handler:has space",
        "arn:aws:sqs:eu-west-1:123456789012:elsewhere",
    ],
)
def test_a_bad_target_is_a_400_naming_target_that_changes_nothing(
    api: Api, svc: Services, target: Any
) -> None:
    before = store_snapshot(svc)

    answer = api.create({"interval": "1h", "target": target})

    assert (answer.status, answer.content_type) == (400, PROBLEM_JSON)
    assert [e["field"] for e in answer.json["errors"]] == ["target"]
    assert store_snapshot(svc) == before
