"""Store outcomes the services branch on."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError


class NotFoundError(Exception):
    """The item does not exist (or belongs to another tenant, which looks the same)."""


class ConflictError(Exception):
    """A conditional write lost: the item changed under us. `current` is the item as it is now."""

    def __init__(self, message: str, current: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.current = current


def is_condition_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def condition_failure_item(exc: ClientError) -> dict[str, Any] | None:
    """The item DynamoDB returned with ReturnValuesOnConditionCheckFailure=ALL_OLD, if any."""
    item: Any = exc.response.get("Item")
    return dict(item) if item else None
