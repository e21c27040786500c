"""The stores, each made the one way every builder makes it, over the DynamoDB client it is given
(the function's own, or, for the API, a tenant's session's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from takt.config import Settings
from takt.store.buckets import TokenBuckets
from takt.store.calendars import CalendarStore
from takt.store.due import DueCursor, DueStore
from takt.store.executions import ExecutionStore
from takt.store.idempotency import IdempotencyStore
from takt.store.jobs import JobStore
from takt.store.quarantine import QuarantineStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DAY = 24 * 3600


def job_store(settings: Settings, dynamodb: DynamoDBClient) -> JobStore:
    return JobStore(dynamodb, settings.jobs_table)


def due_store(settings: Settings, dynamodb: DynamoDBClient) -> DueStore:
    return DueStore(
        dynamodb,
        settings.due_table,
        settings.due_shards,
        split_items=settings.due_split_items,
        split_max=settings.due_split_max,
        cursor=(
            DueCursor(settings.due_late_margin_sec, int(settings.history_retention_days * DAY))
            if settings.due_cursor
            else None
        ),
    )


def execution_store(settings: Settings, dynamodb: DynamoDBClient) -> ExecutionStore:
    return ExecutionStore(
        dynamodb,
        settings.executions_table,
        settings.open_shards,
        int(settings.history_retention_days * DAY),
    )


def idempotency_store(settings: Settings, dynamodb: DynamoDBClient) -> IdempotencyStore:
    return IdempotencyStore(
        dynamodb, settings.idempotency_table, int(settings.idempotency_retention_days * DAY)
    )


def calendar_store(settings: Settings, dynamodb: DynamoDBClient) -> CalendarStore:
    return CalendarStore(dynamodb, settings.tenants_table)


def quarantine_store(settings: Settings, dynamodb: DynamoDBClient) -> QuarantineStore:
    return QuarantineStore(dynamodb, settings.tenants_table)


def token_buckets(settings: Settings, dynamodb: DynamoDBClient) -> TokenBuckets:
    return TokenBuckets(dynamodb, settings.tenants_table)
