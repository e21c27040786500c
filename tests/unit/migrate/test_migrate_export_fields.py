"""An export names every setting of a job it leaves behind: the fields are the API's create
model's (takt_cli.migrate.model.uncarried), so a field added to the model reaches each export as
a note without the exporters being edited, instead of being dropped without a word."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic.fields import FieldInfo

from takt.api.models import JobCreate
from takt_cli.migrate import eventbridge, k8s

QUEUE = "arn:aws:sqs:us-east-1:123456789012:jobs"


def _queue_job(**fields: Any) -> dict[str, Any]:
    return {
        "id": "job_1",
        "name": "sync",
        "status": "active",
        "schedule": "0 9 * * 1-5",
        "time_zone": "Europe/London",
        "target": QUEUE,
        "payload": {"task": "sync"},
        "retry": {"max_attempts": 3, "backoff": "exponential"},
        "timeout_sec": 300,
        "priority": "default",
        "catchup": "once",
        "catchup_window": "1h",
        "overlap": "allow",
        **fields,
    }


def _container_job(**fields: Any) -> dict[str, Any]:
    return _queue_job(payload={"name": "r", "image": "ex/r:1"}, **fields)


def _uncarried(notes: list[str]) -> set[str]:
    return {note.split()[0] for note in notes if note.endswith("is not carried over")}


def test_a_job_at_its_defaults_exports_without_a_note_of_loss() -> None:
    assert _uncarried(eventbridge.export(_queue_job(), None).notes) == set()
    assert _uncarried(k8s.export(_container_job()).notes) == set()


def test_eventbridge_names_the_settings_a_schedule_cannot_hold() -> None:
    exported = eventbridge.export(
        _queue_job(priority="high", timeout_sec=900, notify={"on": ["dead"]}), None
    )

    assert exported.item is not None
    assert _uncarried(exported.notes) == {"priority", "timeout_sec", "notify"}


def test_kubernetes_names_the_settings_a_cronjob_cannot_hold() -> None:
    exported = k8s.export(
        _container_job(start_at="2027-01-01T00:00:00Z", calendars=["holidays"], priority="low")
    )

    assert exported.item is not None
    assert _uncarried(exported.notes) == {"start_at", "calendars", "priority"}


def test_a_field_added_to_the_api_model_is_named_by_every_export(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(JobCreate.model_fields, "description_url", FieldInfo(default=None))

    by_eventbridge = eventbridge.export(_queue_job(description_url="https://docs/x"), None)
    by_kubernetes = k8s.export(_container_job(description_url="https://docs/x"))

    assert "description_url" in _uncarried(by_eventbridge.notes)
    assert "description_url" in _uncarried(by_kubernetes.notes)
