"""Backfill records in the tenants table: one item per (tenant, `backfill#<job>#<id>`), written
with optimistic concurrency on `version`."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError
from pydantic import BaseModel

from takt.models.ids import format_time
from takt.store.errors import ConflictError, NotFoundError, is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PREFIX = "backfill#"
MAX_LISTED = 50

BackfillState = Literal["running", "done", "cancelled"]


class BackfillRecord(BaseModel):
    tenant_id: str
    job_id: str
    backfill_id: str
    start: datetime
    end: datetime
    max_parallel: int
    state: BackfillState = "running"
    # The last occurrence handled (started, or found with an execution already); None: none yet.
    cursor: datetime | None = None
    open: list[str] = []
    total: int
    started: int = 0
    existing: int = 0
    created_at: datetime
    updated_at: datetime
    version: int = 1


class BackfillStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def create(self, record: BackfillRecord) -> None:
        self._db.put_item(
            TableName=self._table,
            Item={**_key(record), "body": {"S": record.model_dump_json()}, "version": {"N": "1"}},
            ConditionExpression="attribute_not_exists(body)",
        )

    def get(self, tenant_id: str, job_id: str, backfill_id: str) -> BackfillRecord:
        resp = self._db.get_item(
            TableName=self._table,
            Key={"tenant_id": {"S": tenant_id}, "counter": {"S": _counter(job_id, backfill_id)}},
            ConsistentRead=True,
        )
        if "Item" not in resp:
            raise NotFoundError(backfill_id)
        return _record(resp["Item"])

    def list_for_job(self, tenant_id: str, job_id: str) -> list[BackfillRecord]:
        """The job's latest backfills, newest first (ids are time-ordered)."""
        resp = self._db.query(
            TableName=self._table,
            KeyConditionExpression="tenant_id = :t AND begins_with(#c, :p)",
            ExpressionAttributeNames={"#c": "counter"},
            ExpressionAttributeValues={
                ":t": {"S": tenant_id},
                ":p": {"S": f"{PREFIX}{job_id}#"},
            },
            ScanIndexForward=False,
            Limit=MAX_LISTED,
            ConsistentRead=True,
        )
        return [_record(item) for item in resp.get("Items", [])]

    def save(self, record: BackfillRecord, now: datetime) -> BackfillRecord:
        """Write `record` over the version it was read at; ConflictError if it moved since."""
        saved = record.model_copy(update={"version": record.version + 1, "updated_at": now})
        try:
            self._db.put_item(
                TableName=self._table,
                Item={
                    **_key(saved),
                    "body": {"S": saved.model_dump_json()},
                    "version": {"N": str(saved.version)},
                    "updated": {"S": format_time(now)},
                },
                ConditionExpression="version = :v",
                ExpressionAttributeValues={":v": {"N": str(record.version)}},
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                raise ConflictError(record.backfill_id) from exc
            raise
        return saved


def _counter(job_id: str, backfill_id: str) -> str:
    return f"{PREFIX}{job_id}#{backfill_id}"


def _key(record: BackfillRecord) -> dict[str, Any]:
    return {
        "tenant_id": {"S": record.tenant_id},
        "counter": {"S": _counter(record.job_id, record.backfill_id)},
    }


def _record(item: dict[str, Any]) -> BackfillRecord:
    return BackfillRecord.model_validate(json.loads(item["body"]["S"]))
