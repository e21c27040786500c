"""What an import or export produces for one source item."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from takt.api.models import JobCreate

MAX_KEY_LENGTH = 256


class MappingError(ValueError):
    """A source item that takt cannot express; the message says what and why."""


@dataclass
class Imported:
    """One source item: the job body it becomes, or why it cannot become one.

    `key` is the idempotency key derived from the item's identity in its source (a CronJob's
    namespace and name, a schedule's group and name, a crontab line's text), so importing the
    same file again returns the jobs the first import made instead of creating new ones.
    """

    source: str
    key: str
    body: dict[str, Any] | None = None
    reason: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str | None:
        return None if self.body is None else self.body.get("name")


@dataclass
class Exported:
    """One job as a source item (a schedule or a manifest), or why it does not map back."""

    job_id: str
    item: dict[str, Any] | None = None
    reason: str | None = None
    notes: list[str] = field(default_factory=list)


def source_key(kind: str, identity: str) -> str:
    """The idempotency key of a source item; hashed when the identity is too long for one."""
    key = f"import:{kind}:{identity}"
    if len(key) <= MAX_KEY_LENGTH:
        return key
    return f"import:{kind}:sha256:{hashlib.sha256(identity.encode()).hexdigest()}"


def checked(item: Imported) -> Imported:
    """Refuse the item now if the API would refuse its body (same models, same checks), so a
    dry run shows what the import would refuse."""

    if item.body is None:
        return item
    try:
        JobCreate.model_validate(item.body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        named = getattr((first.get("ctx") or {}).get("error"), "field", None)
        where = where or (named if isinstance(named, str) else "body")
        message = str(first["msg"]).removeprefix("Value error, ")
        item.reason = f"{where}: {message}"
        item.body = None
    except ValueError as exc:  # a ScheduleError raised from a model validator
        item.reason = str(exc)
        item.body = None
    return item
