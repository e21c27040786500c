"""The quarantine in memory: `Quarantine`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Parked:
    """One parked record: which item, where it was met, and why."""

    table: str
    key: dict[str, str]
    where: str
    error: BaseException
    tenant_id: str | None
    restore: dict[str, str] | None


class FakeQuarantine:
    """The records parked, in order."""

    def __init__(self) -> None:
        self.parked: list[Parked] = []

    def park(
        self,
        *,
        table: str,
        key: Mapping[str, str],
        where: str,
        error: BaseException,
        now: datetime,
        tenant_id: str | None = None,
        restore: Mapping[str, str] | None = None,
    ) -> str:
        self.parked.append(
            Parked(
                table,
                dict(key),
                where,
                error,
                tenant_id,
                None if restore is None else dict(restore),
            )
        )
        return f"q{len(self.parked)}"
