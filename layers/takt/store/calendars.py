"""Calendars in the tenants table: one item per (tenant, `calendar#<name>`), so each tenant's
calendars sit under its own partition key, where IAM's LeadingKeys confines its API calls."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.models.calendars import Calendar, CalendarBody
from takt.models.ids import format_time, parse_time
from takt.store.errors import ConflictError, NotFoundError, is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PREFIX = "calendar#"
MAX_CALENDARS = 100


class CalendarStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def put(
        self, tenant_id: str, name: str, body: CalendarBody, now: datetime, *, create: bool
    ) -> Calendar:
        """Create a calendar (ConflictError if it exists) or replace one (NotFoundError if it
        does not); its version counts the writes."""
        condition = "attribute_not_exists(body_json)" if create else "attribute_exists(body_json)"
        try:
            resp = self._db.update_item(
                TableName=self._table,
                Key=_key(tenant_id, name),
                UpdateExpression="SET body_json = :b, updated_at = :t ADD version :one",
                ConditionExpression=condition,
                ExpressionAttributeValues={
                    ":b": {"S": body.model_dump_json()},
                    ":t": {"S": format_time(now)},
                    ":one": {"N": "1"},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            raise (ConflictError(name) if create else NotFoundError(name)) from exc
        return _calendar(name, resp["Attributes"])

    def get(self, tenant_id: str, name: str) -> Calendar:
        resp = self._db.get_item(TableName=self._table, Key=_key(tenant_id, name))
        if "Item" not in resp:
            raise NotFoundError(name)
        return _calendar(name, resp["Item"])

    def list(self, tenant_id: str) -> list[Calendar]:
        """The tenant's calendars by name (at most MAX_CALENDARS are read)."""
        resp = self._db.query(
            TableName=self._table,
            KeyConditionExpression="tenant_id = :t AND begins_with(#c, :p)",
            ExpressionAttributeNames={"#c": "counter"},
            ExpressionAttributeValues={":t": {"S": tenant_id}, ":p": {"S": PREFIX}},
            Limit=MAX_CALENDARS,
        )
        return [
            _calendar(item["counter"]["S"].removeprefix(PREFIX), item)
            for item in resp.get("Items", [])
        ]

    def delete(self, tenant_id: str, name: str) -> None:
        try:
            self._db.delete_item(
                TableName=self._table,
                Key=_key(tenant_id, name),
                ConditionExpression="attribute_exists(body_json)",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                raise NotFoundError(name) from exc
            raise


def _key(tenant_id: str, name: str) -> dict[str, Any]:
    return {"tenant_id": {"S": tenant_id}, "counter": {"S": PREFIX + name}}


def _calendar(name: str, item: dict[str, Any]) -> Calendar:
    body = json.loads(item["body_json"]["S"])
    return Calendar(
        name=name,
        version=int(item["version"]["N"]),
        updated_at=parse_time(item["updated_at"]["S"]),
        **body,
    )
