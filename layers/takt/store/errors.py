"""Store outcomes the services branch on."""

from __future__ import annotations

import zlib
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from takt.models.records import ExecutionRecord


class NotFoundError(Exception):
    """The item does not exist (or belongs to another tenant, which looks the same)."""


class StoreUnavailableError(Exception):
    """The table did not answer for now (throttled past the SDK's retries, the network down): a
    caller that can go on without this read or write does, and tries again later."""


class ConflictError(Exception):
    """A conditional write lost: the item changed under us."""


class ExecutionConflictError(ConflictError):
    """An execution's conditional write lost; `current` is the execution as it is now (read at
    no cost from the failed write), so the caller can tell its own earlier retry from a rival."""

    def __init__(self, message: str, current: ExecutionRecord) -> None:
        super().__init__(message)
        self.current = current


def is_condition_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def condition_failure_item(exc: ClientError) -> dict[str, Any] | None:
    """The item DynamoDB returned with ReturnValuesOnConditionCheckFailure=ALL_OLD, if any."""
    item: Any = exc.response.get("Item")
    return dict(item) if item else None


# DynamoDB's answer to a request it can never accept as written (an item over 400 KB, a key or
# attribute it refuses): retrying the same write fails the same way.
_INVALID_REQUEST_CODES = frozenset(
    {"ValidationException", "ItemCollectionSizeLimitExceededException"}
)
# What reading an item that is not what takt wrote raises: a missing or mistyped attribute, a
# time, a number or JSON that does not parse, a model that does not validate (pydantic's
# ValidationError is a ValueError), an instant beyond datetime's range.
_PARSE_FAULTS = (ValueError, KeyError, TypeError, AttributeError, ArithmeticError, zlib.error)


def is_record_fault(exc: BaseException) -> bool:
    """Whether `exc` is about one record, and would recur on every try: that record cannot be
    read, or DynamoDB refuses the write as invalid. Such a record is quarantined
    (`takt.store.quarantine`); anything else (throttling, timeouts, lost connections, a lost
    condition) is not, and fails the step so that it is retried."""
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code") in _INVALID_REQUEST_CODES
    if isinstance(exc, BotoCoreError):
        # A request botocore refuses to send for this item's values; its other errors (a region
        # or endpoint it cannot resolve, some of them ValueErrors) are the deployment's.
        return isinstance(exc, ParamValidationError)
    return isinstance(exc, _PARSE_FAULTS)
