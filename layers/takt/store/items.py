"""Jobs and executions as DynamoDB items, and back: the only place that knows their item forms.

Payloads are stored as JSON text so arbitrary JSON (floats included) round-trips without
DynamoDB's Decimal rules touching it; a workflow's tasks as compressed JSON (`tasks_blob`); times
as UTC text (`format_time`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from takt.models.ids import format_time, parse_time
from takt.models.records import ExecutionRecord, JobRecord, tasks_blob

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

Item = dict[str, Any]

_TIME_FIELDS = {
    "run_at",
    "start_at",
    "end_at",
    "anchor",
    "next_run_time",
    "created_at",
    "updated_at",
    "last_run_at",
    "scheduled_time",
    "started_at",
    "finished_at",
    "retry_at",
    "pause_until",
}


def to_attr_map(values: dict[str, Any]) -> Item:
    """Plain Python values -> DynamoDB's typed attribute map, dropping None."""
    return {k: _serializer.serialize(v) for k, v in values.items() if v is not None}


def from_attr_map(item: Item) -> dict[str, Any]:
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


def job_item(job: JobRecord) -> Item:
    data = job.model_dump(mode="python", exclude={"payload", "tasks"})
    for key, value in list(data.items()):
        if isinstance(value, datetime):
            data[key] = format_time(value)
    data["payload_json"] = json.dumps(job.payload, separators=(",", ":"))
    data["tasks_z"] = tasks_blob(job.tasks)
    return to_attr_map(data)


def job_record(item: Item) -> JobRecord:
    data = from_attr_map(item)
    data["payload"] = json.loads(data.pop("payload_json", "null"))
    blob = data.pop("tasks_z", None)
    if blob is not None:
        data["tasks"] = json.loads(zlib.decompress(bytes(blob.value)))
    for key, value in list(data.items()):
        if isinstance(value, str) and key in _TIME_FIELDS:
            data[key] = parse_time(value)
    return JobRecord.model_validate(_plain(data))


def execution_item(
    record: ExecutionRecord, *, open_shard: str | None, check_at: int | None, expires_at: int
) -> Item:
    data = record.model_dump(mode="python", exclude={"payload"})
    data["payload_json"] = json.dumps(record.payload, separators=(",", ":"))
    for key, value in list(data.items()):
        if isinstance(value, datetime):
            data[key] = format_time(value)
    data["attempts"] = [a.model_dump(exclude_none=True) for a in record.attempts]
    data.update(
        job_key=record.job_key,
        sk=record.sk,
        open_shard=open_shard,
        check_at=check_at,
        expires_at=expires_at,
    )
    return to_attr_map(data)


def execution_snapshot(job: JobRecord) -> dict[str, Any]:
    """The attributes of an execution that hold what to run, as `job` now is: the values
    `execution_item` stores for a record `ExecutionRecord.for_job` made. A lease that runs an
    occurrence as its job was edited to since the claim (takt.worker.recheck) sets them."""
    return {
        "job_version": job.version,
        "target": job.target,
        "payload_json": json.dumps(job.payload, separators=(",", ":")),
        "timeout_sec": job.timeout_sec,
        "retry": job.retry.model_dump(),
        "max_attempts": job.retry.max_attempts,
    }


def execution_record(item: Item) -> ExecutionRecord:
    data = _plain(from_attr_map(item))
    data["payload"] = json.loads(data.pop("payload_json", "null"))
    for key, value in list(data.items()):
        if isinstance(value, str) and key in _TIME_FIELDS:
            data[key] = parse_time(value)
    return ExecutionRecord.model_validate(data)


def stream_images(record: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A table stream record's old and new images as plain values (empty when absent)."""
    change = record.get("dynamodb") or {}
    old, new = change.get("OldImage") or {}, change.get("NewImage") or {}
    return _plain(from_attr_map(dict(old))), _plain(from_attr_map(dict(new)))


def stream_key(record: Mapping[str, Any]) -> dict[str, str]:
    """The item a table stream record is about, as its key's text (the record's sequence number
    when it names no key), for a quarantine record to name it."""
    change = record.get("dynamodb") or {}
    keys = change.get("Keys") or {}
    found = {name: str(value.get("S", value)) for name, value in keys.items()}
    return found or {"sequence_number": str(change.get("SequenceNumber", ""))}


def _plain(value: Any) -> Any:
    """Decimal -> int/float, recursively, for what the deserializer returns."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set):
        return [_plain(v) for v in value]
    return value
