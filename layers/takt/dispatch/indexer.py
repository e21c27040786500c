"""The due indexer: keeps the due index in step with the jobs the API writes.

The API never touches the due index (its keys, (minute bucket, shard), do not start with a
tenant, so no IAM condition could confine a caller to its own items there). It writes only the
job; the jobs table's stream (NEW_AND_OLD_IMAGES) carries each change here, and for an active job
whose `next_run_time` is new, the indexer puts the due item at that time. In the cloud this is
the `indexer` function on the stream; `takt local` polls moto's stream in a thread.

Which changes it indexes:

- a new job, or a change by the API (its `version` moved) that leaves the job active with a
  `next_run_time` or `jitter` different from before, or makes it active again;
- not the claimer's advance (same `version`): the claimer puts the next due item itself before it
  moves the job there (its step 3 before step 4), so indexing it again would only rewrite it,
  and a late copy could outlive the occurrence it names;
- not a removal or a job left without a next run: nothing is due; the item left behind is stale
  and a claim deletes it.

With resting drivers (`takt.dispatch.rest`), an item put for a time before the next minute's
driver starts one when none is awake.

Putting a due item is idempotent (same key, same item; only `written_ms` moves, which keeps a
concurrent stale-delete from removing it), and the stream delivers the changes of one job in
order, so a retried batch repeats writes without reordering them.

A write of the API that calls for a due item also marks the job `unindexed` (a sparse index of
the jobs table); once the indexer has put the due item it clears the marker that write set, and
a marker the indexer never clears (it was down past the stream's 24 hours, or gave up on the
record) is found and repaired by the reconciler (`takt.dispatch.reconciler`). A marker set
without an edit (the claimer's, the quarantine's) is the reconciler's alone.

A record that cannot be read or indexed (a record fault: a time or duration that does not
parse, a write DynamoDB refuses) is parked in quarantine and counted, and the batch goes on;
only a transient failure raises, and so fails the record for Lambda to retry (DESIGN
invariant 9).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from takt.clock import Clock
from takt.dispatch.rest import Waker
from takt.models.ids import parse_time
from takt.models.records import JobStatus
from takt.schedule import jitter_offset, parse_duration
from takt.store.due import DueStore
from takt.store.errors import is_record_fault
from takt.store.items import stream_images, stream_key
from takt.store.jobs import JobStore
from takt.store.quarantine import QuarantineStore


@dataclass(frozen=True)
class DueWrite:
    """A due item to put: the job and the instant it next fires (its next occurrence, plus its
    jitter offset)."""

    tenant_id: str
    job_id: str
    due: datetime


@dataclass
class IndexResult:
    indexed: int = 0
    ignored: int = 0
    quarantined: int = 0


def _text(image: Mapping[str, Any], name: str) -> str | None:
    value = image.get(name)
    return str(value) if value is not None else None


def due_write(record: Mapping[str, Any]) -> DueWrite | None:
    """The due item a jobs-table stream record calls for, or None; a pure function."""
    old, new = stream_images(record)
    next_run = _text(new, "next_run_time")
    if not new or next_run is None or _text(new, "status") != JobStatus.ACTIVE.value:
        return None
    if old:
        was_active = _text(old, "status") == JobStatus.ACTIVE.value
        if was_active and _text(old, "version") == _text(new, "version"):
            return None  # the claimer's advance: it indexed the next occurrence itself
        if was_active and _when(old) == _when(new):
            return None  # an edit that moved nothing: the item is where it was
    tenant_id, job_id = _text(new, "tenant_id"), _text(new, "job_id")
    if tenant_id is None or job_id is None:
        return None
    nominal = parse_time(next_run)
    jitter = _text(new, "jitter")
    if jitter is not None:
        # The item holds the jittered firing, so the claim finds it then (takt.schedule.jitter).
        nominal += jitter_offset(job_id, nominal, parse_duration(jitter))
    return DueWrite(tenant_id, job_id, nominal)


def _new_marker(record: Mapping[str, Any]) -> int | None:
    """The `unindexed` marker the API's write of `record` set (its time), or None when it set
    none. A marker set without an edit (the job's `version` unchanged: the claimer's note of a
    half-done advance, a cleared quarantine record) calls for the reconciler's check of the job
    as it then is, which no stream record's image answers: the indexer leaves it."""
    old, new = stream_images(record)
    marked = _text(new, "unindexed_at")
    if marked is None or marked == _text(old, "unindexed_at"):
        return None
    if old and _text(old, "version") == _text(new, "version"):
        return None
    return int(marked)


def _when(image: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """What decides where an image's due item is: its next occurrence and its jitter."""
    return _text(image, "next_run_time"), _text(image, "jitter")


class DueIndexer:
    """Applies jobs-table stream records to the due index."""

    def __init__(
        self,
        due: DueStore,
        clock: Clock,
        jobs: JobStore | None = None,
        quarantine: QuarantineStore | None = None,
        waker: Waker | None = None,
    ) -> None:
        self._due = due
        self._clock = clock
        self._jobs = jobs
        self._quarantine = quarantine
        # With resting drivers: starts one for an item due before the next minute's driver.
        self._waker = waker

    def index(self, record: Mapping[str, Any]) -> bool:
        """Index one stream record; True when it put a due item. A transient AWS error raises,
        so the record is retried (the stream keeps its order per job); a record fault parks the
        record in quarantine and returns False."""
        return self.index_one(record) == "indexed"

    def index_one(self, record: Mapping[str, Any]) -> str:
        """Index one stream record: "indexed", "ignored" or "quarantined"."""
        try:
            write = due_write(record)
            if write is not None:
                self._due.put(write.tenant_id, write.job_id, write.due, self._clock.now())
                if self._waker is not None:
                    self._waker.indexed(write.due)
            marked = _new_marker(record)
            if marked is not None and self._jobs is not None:
                key = stream_key(record)
                self._jobs.clear_unindexed(key["tenant_id"], key["job_id"], marked)
        except Exception as exc:
            if not is_record_fault(exc):
                raise
            self._park(record, exc)
            return "quarantined"
        return "indexed" if write is not None else "ignored"

    def _park(self, record: Mapping[str, Any], error: Exception) -> None:
        """Quarantine a record that cannot be indexed. Its job keeps its `unindexed` marker, so
        clearing the record (once the job is repaired) lets the reconciler index it."""
        if self._quarantine is None:
            return
        key = stream_key(record)
        self._quarantine.park(
            table="jobs",
            key=key,
            where="indexer",
            error=error,
            now=self._clock.now(),
            tenant_id=key.get("tenant_id"),
        )

    def index_all(self, records: Iterable[Mapping[str, Any]]) -> IndexResult:
        result = IndexResult()
        for record in records:
            outcome = self.index_one(record)
            if outcome == "indexed":
                result.indexed += 1
            elif outcome == "quarantined":
                result.quarantined += 1
            else:
                result.ignored += 1
        return result
