"""Domain errors of the job API, each mapped once to an HTTP problem (see app.py), and the one
place the store's outcomes become them (`store_errors`, `cursor_errors`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from takt.store.errors import ConflictError, NotFoundError


class ApiError(Exception):
    status = 400
    title = "Bad Request"

    def __init__(self, detail: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors


class InvalidRequestError(ApiError):
    status = 400
    title = "Invalid request"


class JobNotFoundError(ApiError):
    status = 404
    title = "Not Found"


class ConflictingStateError(ApiError):
    status = 409
    title = "Conflict"


class GoneError(ApiError):
    """The idempotency key names a job that was created and has since been deleted."""

    status = 410
    title = "Gone"


class PreconditionFailedError(ApiError):
    status = 412
    title = "Precondition Failed"


class PayloadTooLargeError(ApiError):
    status = 413
    title = "Payload Too Large"


class UnsupportedMediaTypeError(ApiError):
    status = 415
    title = "Unsupported Media Type"


class IdempotencyMismatchError(ApiError):
    status = 422
    title = "Idempotency key reused with a different body"


class UnauthenticatedError(ApiError):
    status = 401
    title = "Unauthorized"


class ForbiddenError(ApiError):
    status = 403
    title = "Forbidden"


class TooManyRequestsError(ApiError):
    """A tenant limit is reached; `retry_after_sec` (when set) is when trying again can help."""

    status = 429
    title = "Too Many Requests"

    def __init__(
        self,
        detail: str,
        errors: list[dict[str, Any]] | None = None,
        retry_after_sec: int | None = None,
    ) -> None:
        super().__init__(detail, errors)
        self.retry_after_sec = retry_after_sec


class RegionUnavailableError(ApiError):
    """A change to an existing job is made only in the lease holder's replica (docs/ARCHITECTURE.md,
    "Regions"); when no region holds the lease or its replica cannot be reached, the change is
    refused, never written locally, and `retry_after_sec` says when trying again can help."""

    status = 503
    title = "Service Unavailable"

    def __init__(self, detail: str, retry_after_sec: int) -> None:
        super().__init__(detail)
        self.retry_after_sec = retry_after_sec


@contextmanager
def store_errors(
    subject: str,
    *,
    conflict: str | None = None,
    changed: type[ApiError] = ConflictingStateError,
) -> Iterator[None]:
    """The store's outcomes inside the block as problems about `subject` ("job job_1"): a
    missing item is 404, a conditional write that lost is `changed` (409; 412 where the request
    named the version it expected) with `conflict` as its detail (default: changed meanwhile)."""
    try:
        yield
    except NotFoundError:
        raise JobNotFoundError(f"{subject} not found") from None
    except ConflictError:
        raise changed(conflict or f"{subject} changed meanwhile") from None


@contextmanager
def cursor_errors() -> Iterator[None]:
    """A page cursor the store cannot read (it raises ValueError) as 400 naming `cursor`."""
    try:
        yield
    except ValueError as exc:
        raise InvalidRequestError(str(exc), [{"field": "cursor", "message": str(exc)}]) from exc
