"""Request models: what a create or update accepts, and which field an error blames."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from takt.api.jobs import body_hash
from takt.api.models import FieldError, JobCreate, JobPatch

TARGET = "https://svc/report"


def blamed_field(model: type[JobCreate] | type[JobPatch], body: dict[str, Any]) -> str:
    """The field an invalid body is blamed on: the location, or the FieldError's field."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    error = caught.value.errors()[0]
    if error["loc"]:
        return ".".join(str(p) for p in error["loc"])
    cause = (error.get("ctx") or {}).get("error")
    assert isinstance(cause, ValueError)
    field: str = getattr(cause, "field")  # noqa: B009 - FieldError and ScheduleError carry it
    return field


def test_seed_body_is_valid() -> None:
    job = JobCreate.model_validate(
        {
            "schedule": "0 6 * * *",
            "target": TARGET,
            "payload": {"report": "daily"},
            "retry": {"max_attempts": 5, "backoff": "exponential"},
            "timeout_sec": 300,
            "idempotency_key": "k",
        }
    )

    assert (job.time_zone, job.priority, job.catchup, job.overlap) == (
        "UTC",
        "default",
        "once",
        "allow",
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"target": TARGET}, "schedule"),
        ({"schedule": "0 6 * * *", "run_at": "2026-03-03T00:00:00Z", "target": TARGET}, "run_at"),
        ({"run_at": "2026-03-03T00:00:00Z", "interval": "1h", "target": TARGET}, "interval"),
        ({"schedule": "0 0 30 2 *", "target": TARGET}, "schedule"),
        ({"schedule": "0 6 * * *", "time_zone": "Mars/Base", "target": TARGET}, "time_zone"),
        (
            {
                "interval": "1h",
                "start_at": "2026-03-03T00:00:00Z",
                "end_at": "2026-03-02T00:00:00Z",
                "target": TARGET,
            },
            "end_at",
        ),
        ({"interval": "1h", "target": "file:///etc/passwd"}, "target"),
        ({"interval": "1h", "target": "http://"}, "target"),
    ],
)
def test_invalid_create_blames_the_field(body: dict[str, Any], field: str) -> None:
    assert blamed_field(JobCreate, body) == field


def test_patch_with_two_schedules_blames_the_second() -> None:
    assert blamed_field(JobPatch, {"schedule": "0 6 * * *", "interval": "1h"}) == "interval"


def test_patch_may_leave_every_field_out() -> None:
    assert JobPatch.model_validate({}).model_fields_set == set()


def test_field_error_is_a_value_error_with_its_field() -> None:
    error = FieldError("end_at", "end_at must be after start_at")

    assert isinstance(error, ValueError)
    assert (error.field, str(error)) == ("end_at", "end_at must be after start_at")


def test_body_hash_ignores_key_order() -> None:
    assert body_hash({"a": 1, "b": {"c": 2, "d": 3}}) == body_hash({"b": {"d": 3, "c": 2}, "a": 1})


def test_body_hash_differs_for_different_bodies() -> None:
    assert body_hash({"a": 1}) != body_hash({"a": 2})
