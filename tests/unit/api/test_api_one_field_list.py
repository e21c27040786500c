"""One list of a job's fields (issue 30: a new job field touched about ten files): the create and
the update bound each field alike, every field of a create is stored, and the response shows each
field of the record by its name, so a field added to the models needs no edit elsewhere."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from takt.api.models import JobCreate, JobOut, JobPatch
from takt.models.notify import NotifyPolicy
from takt.models.records import Dst, JobRecord, JobStatus, RetryPolicy

# A create's fields that are no part of the job stored: how to take the request.
NOT_STORED = {"run_late"}
# A response's fields that are not the record's under the same name.
NOT_THE_RECORD_S = {"id"}
AT = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
AT_SHOWN = "2030-01-02T03:04:05.678Z"


def _bounds(model: type[BaseModel]) -> dict[str, Any]:
    """Each field's schema, its null option, description, default and title left out."""
    found = {}
    for name, schema in model.model_json_schema()["properties"].items():
        options = [o for o in schema.get("anyOf", []) if o != {"type": "null"}]
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "description", "default")}
        merged = {**options[0], **rest} if len(options) == 1 else {**rest, "anyOf": options}
        found[name] = {k: v for k, v in merged.items() if k not in ("description", "title")}
    return found


def test_a_create_and_an_update_bound_each_field_alike() -> None:
    create, update = _bounds(JobCreate), _bounds(JobPatch)
    apart = [name for name in create.keys() & update.keys() if create[name] != update[name]]

    assert apart == [], f"one list of a job's fields: create and update bound {apart} apart"
    assert set(create) - set(update) == {"idempotency_key"}, "an update takes every other field"


def test_every_field_of_a_create_is_stored() -> None:
    dropped = set(JobCreate.model_fields) - set(JobRecord.model_fields) - NOT_STORED

    assert dropped == set(), f"one list of a job's fields: a create's {dropped} are not stored"


def test_the_response_shows_each_field_of_the_record_by_its_name() -> None:
    record = JobRecord(
        tenant_id="t",
        job_id="job_01",
        name="nightly",
        status=JobStatus.PAUSED,
        interval="1h",
        time_zone="Europe/Berlin",
        dst=Dst(gap="skip", overlap="twice"),
        start_at=AT,
        end_at=AT,
        anchor=AT,
        target="https://svc.example/hook",
        payload={"a": 1},
        retry=RetryPolicy(max_attempts=2),
        timeout_sec=9,
        priority="high",
        catchup="all",
        catchup_window="2h",
        overlap="replace",
        jitter="5m",
        pause_until=AT,
        calendars=["holidays"],
        notify=NotifyPolicy(to="https://n.example/"),
        idempotency_key="k",
        version=3,
        next_run_time=AT,
        created_at=AT,
        updated_at=AT,
        last_execution_id="job_01.x",
        last_outcome="succeeded",
        last_run_at=AT,
    )

    shown = json.loads(JobOut.of(record).model_dump_json())
    stored = json.loads(record.model_dump_json())
    stored.update({name: AT_SHOWN for name, value in record if isinstance(value, datetime)})
    missing = set(JobOut.model_fields) - set(JobRecord.model_fields) - NOT_THE_RECORD_S
    compared = JobOut.model_fields.keys() - NOT_THE_RECORD_S - {"status"}
    differ = {name: (shown[name], stored[name]) for name in compared if shown[name] != stored[name]}

    assert missing == set(), f"one list of a job's fields: the response's {missing} are not stored"
    assert differ == {}, f"one list of a job's fields: the response shows {differ} otherwise"
    assert (shown["id"], shown["status"]) == ("job_01", "paused")
