"""The jobs table in memory: `ClaimerJobs` (and so `LifecycleJobs` and `JobReader`)."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from takt.models.ids import format_time, to_ms
from takt.models.records import JobRecord, JobStatus, success_may_go_unnoted
from takt.store.errors import NotFoundError, is_record_fault
from takt.store.items import job_item, job_record
from takt.store.jobs import FAILED_OUTCOMES, INCIDENT_ATTRS, UNINDEXED_SHARDS
from takt.store.ports import Advance, OutcomeNote

Item = dict[str, Any]
Key = tuple[str, str]


class FakeJobs:
    """Jobs as items keyed by (tenant, job id), with the conditions `JobStore` writes.

    `before_advance` runs before each `advance` is evaluated: a test puts an edit there to land
    between a claim's read of the job and its advance, or raises to crash the claim at step 4.
    """

    def __init__(self) -> None:
        self.items: dict[Key, Item] = {}
        self.before_advance: Callable[[JobRecord], None] | None = None
        self.advances = 0
        # The outcomes noted (execution id, outcome), in order: a refused note is not here.
        self.outcomes: list[tuple[str, str]] = []

    # What the API writes (test setup)

    def put(self, job: JobRecord) -> JobRecord:
        """Write the whole job, as a create does."""
        self.items[(job.tenant_id, job.job_id)] = job_item(job)
        return job

    def edit(self, tenant_id: str, job_id: str, **changes: Any) -> JobRecord:
        """Change a job as an acknowledged API update does: its version moves on, and what the
        scheduler and the workers keep on it (slot, noted outcome, markers) stays."""
        job = self.get(tenant_id, job_id)
        edited = job.model_copy(update={**changes, "version": job.version + 1})
        item = {**self.items[(tenant_id, job_id)], **job_item(edited)}
        for attr in (name for name, value in changes.items() if value is None):
            item.pop(attr, None)
        self.items[(tenant_id, job_id)] = item
        return edited

    def attr(self, tenant_id: str, job_id: str, name: str) -> str | None:
        """One attribute of the stored item as text (None when absent)."""
        value = self.items[(tenant_id, job_id)].get(name)
        return None if value is None else str(value.get("S", value.get("N")))

    # JobReader

    def get(self, tenant_id: str, job_id: str, *, consistent: bool = True) -> JobRecord:
        return job_record(self._item(tenant_id, job_id))

    def _item(self, tenant_id: str, job_id: str) -> Item:
        try:
            return self.items[(tenant_id, job_id)]
        except KeyError:
            raise NotFoundError(job_id) from None

    # LifecycleJobs

    def take_slot(
        self, tenant_id: str, job_id: str, execution_id: str, *, expected: str | None
    ) -> bool:
        item = self.items.get((tenant_id, job_id))
        if item is None or item.get("active_execution") != _text(expected):
            return False
        item["active_execution"] = {"S": execution_id}
        return True

    def release_slot(self, tenant_id: str, job_id: str, execution_id: str) -> None:
        item = self.items.get((tenant_id, job_id))
        if item is not None and item.get("active_execution") == {"S": execution_id}:
            del item["active_execution"]

    def outcome_settled(self, tenant_id: str, job_id: str) -> bool:
        item = self.items.get((tenant_id, job_id))
        if item is None:
            return True
        if any(attr in item for attr in ("failure_streak", *INCIDENT_ATTRS.values())):
            return False
        return success_may_go_unnoted(
            item.get("last_outcome", {}).get("S"), item.get("status", {}).get("S")
        )

    def record_outcome(
        self, tenant_id: str, job_id: str, execution_id: str, outcome: str, at: datetime
    ) -> OutcomeNote | None:
        item = self.items.get((tenant_id, job_id))
        last = None if item is None else item.get("last_execution_id", {}).get("S")
        if item is None or (last is not None and last > execution_id):
            return None
        if (last, item.get("last_outcome"), item.get("last_run_at")) == (
            execution_id,
            {"S": outcome},
            {"S": format_time(at)},
        ):
            # The same note again (a redo) changes nothing; the note stands as it is.
            noted = {k: str(item[a]["S"]) for k, a in INCIDENT_ATTRS.items() if a in item}
            if outcome in FAILED_OUTCOMES:
                return OutcomeNote(job_record(item), int(item["failure_streak"]["N"]), noted)
            return OutcomeNote(job=None, failure_streak=0, incidents={})
        self.outcomes.append((execution_id, outcome))
        item.update(
            last_execution_id={"S": execution_id},
            last_outcome={"S": outcome},
            last_run_at={"S": format_time(at)},
        )
        incidents = {k: str(item[a]["S"]) for k, a in INCIDENT_ATTRS.items() if a in item}
        if outcome == "succeeded":
            for attr in ("failure_streak", *INCIDENT_ATTRS.values()):
                item.pop(attr, None)
            return OutcomeNote(job=None, failure_streak=0, incidents=incidents)
        if outcome in FAILED_OUTCOMES:
            streak = int(item.get("failure_streak", {"N": "0"})["N"]) + 1
            item["failure_streak"] = {"N": str(streak)}
            return OutcomeNote(job_record(item), streak, incidents)
        return None

    # ClaimerJobs

    def batch_read(self, keys: list[Key]) -> tuple[dict[Key, JobRecord], dict[Key, Exception]]:
        found: dict[Key, JobRecord] = {}
        unreadable: dict[Key, Exception] = {}
        for key in dict.fromkeys(keys):
            if key not in self.items:
                continue
            try:
                found[key] = job_record(self.items[key])
            except Exception as exc:
                if not is_record_fault(exc):
                    raise
                unreadable[key] = exc
        return found, unreadable

    def advance(
        self,
        job: JobRecord,
        fired: datetime,
        next_run: datetime | None,
        *,
        active_execution: str | None = None,
        region_epoch: int | None = None,
    ) -> Advance:
        """`JobStore.advance`: `#n = :fired AND #s = :active AND #v = :version` (and, with a
        region epoch, no later one stored), and on a failed condition the item as it is
        (`ALL_OLD`)."""
        if self.before_advance is not None:
            self.before_advance(job)
        item = self.items.get((job.tenant_id, job.job_id))
        if item is None:
            return Advance(False)
        stored = int(item["region_epoch"]["N"]) if "region_epoch" in item else None
        holds = (
            item.get("next_run_time") == {"S": format_time(fired)}
            and item.get("status") == {"S": JobStatus.ACTIVE.value}
            and item.get("version") == {"N": str(job.version)}
            and (region_epoch is None or stored is None or stored <= region_epoch)
        )
        if not holds:
            return Advance(False, job_record(item), stored)
        if region_epoch is not None:
            item["region_epoch"] = {"N": str(region_epoch)}
        if next_run is None:
            item.pop("next_run_time", None)
            item["status"] = {"S": JobStatus.COMPLETED.value}
        else:
            item["next_run_time"] = {"S": format_time(next_run)}
        if active_execution:
            item["active_execution"] = {"S": active_execution}
        self.advances += 1
        return Advance(True)

    def note_unindexed(self, tenant_id: str, job_id: str, at: datetime) -> bool:
        item = self.items.get((tenant_id, job_id))
        if item is None or "unindexed" in item:
            return False
        shard = zlib.crc32(f"{tenant_id}#{job_id}".encode()) % UNINDEXED_SHARDS
        item.update(unindexed={"S": str(shard)}, unindexed_at={"N": str(to_ms(at))})
        return True


def _text(value: str | None) -> dict[str, str] | None:
    return None if value is None else {"S": value}
