"""What an import or export produces for one source item."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from takt.api.models import JobCreate
from takt.schedule import parse_duration
from takt.schedule.cron import parse_expression

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


def uncarried(job: Mapping[str, Any], carried: Collection[str]) -> list[str]:
    """A note for each setting of `job` that an export neither writes nor notes itself (not in
    `carried`) and that the job sets away from its default: the fields are the API's create
    model's, so a field added there is named when an export leaves it behind, never dropped
    without a word."""
    notes = []
    for name, spec in JobCreate.model_fields.items():
        if name in carried or job.get(name) is None:
            continue
        default = spec.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            default = default.model_dump(mode="json")
        if job[name] != default:
            notes.append(f"{name} is not carried over")
    return notes


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


_INSTANTS = frozenset({"run_at", "start_at", "end_at", "pause_until"})
_DURATIONS = frozenset({"interval", "catchup_window", "jitter"})
_NOT_DEFINITION = {"idempotency_key", "run_late"}


def differences(job: dict[str, Any], body: dict[str, Any]) -> list[str]:
    """The fields in which `job` (as the API shows it) differs from the job `body` would create,
    defaults included: what tells a re-import whether the job is still what the source says.

    Instants and durations are compared by value, as the API may spell them differently.
    """
    wanted = JobCreate.model_validate(body).model_dump(mode="json", exclude=_NOT_DEFINITION)
    return sorted(
        field for field, value in wanted.items() if not _same(field, job.get(field), value)
    )


def _same(field: str, have: Any, want: Any) -> bool:
    if have is None or want is None:
        return have is None and want is None
    if field in _INSTANTS:
        return _instant(have) == _instant(want)
    if field in _DURATIONS:
        return _same_duration(have, want)
    if field == "schedule":
        return _same_cron(have, want)
    if field == "retry":
        return all(_same_leaf(have.get(key), value) for key, value in want.items())
    return bool(have == want)


def _same_leaf(have: Any, want: Any) -> bool:
    if isinstance(want, str) and isinstance(have, str) and have != want:
        return _same_duration(have, want)
    return bool(have == want)


def _same_duration(have: str, want: str) -> bool:
    try:
        return parse_duration(have) == parse_duration(want)
    except ValueError:
        return have == want


def _same_cron(have: str, want: str) -> bool:
    """Whether two cron expressions say the same (`MON-FRI` and `1-5`, as an export writes)."""
    try:
        return replace(parse_expression(have), text="") == replace(parse_expression(want), text="")
    except ValueError:
        return have == want


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
