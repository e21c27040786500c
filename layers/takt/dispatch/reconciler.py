"""The reconciler: repairs the due item of every job the indexer did not index, or the claimer
saw half advanced.

The API writes a job with an `unindexed` marker whenever the write calls for a due item
(`takt.store.jobs.needs_index`), in the same write; the indexer clears the marker that write set
once it has put the due item. A marker older than `reindex_grace_sec` therefore names a job the
indexer did not index in time: it was down (for longer than the stream's 24 hours, even), gave
up on the record (the failure queue), or parked it in quarantine. The claimer sets the same
marker on a job whose advance it saw half done: a due item after the job's occurrence, still
there past the due grace period (the advance that put it may have died, or landed with the
job's own item gone), so a job a claim found in that state is checked here too. The reconciler
reads those markers from the sparse `unindexed` index (a handful of queries, never a scan of the
jobs table), reads each job consistently, puts its due item from the job as it is now, and
clears the marker it read. A due time already past goes into the current minute's bucket, so
the claim fires it at once, late, under the job's catch-up rules, with its lateness recorded.

Every step is idempotent and fenced: the due item is the indexer's own (same key), a marker set
by a later write survives the clear (it is conditional on the marker's time), and a repair
racing the claimer's advance leaves at worst a stale due item, which a claim deletes. A job that
cannot be read is parked in quarantine and its marker cleared (DESIGN invariant 9); clearing the
quarantine record marks it again. The watchdog runs it once per invocation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from takt.models.ids import to_ms
from takt.models.records import JobStatus
from takt.observability import logger
from takt.store.due import DueStore
from takt.store.errors import NotFoundError, is_record_fault
from takt.store.jobs import UNINDEXED_SHARDS, JobStore, Unindexed
from takt.store.quarantine import QuarantineStore


@dataclass
class ReconcileResult:
    # Markers older than the grace period that the run read.
    found: int = 0
    # Due items it put (active jobs with a next run).
    repaired: int = 0
    quarantined: int = 0


class Reconciler:
    def __init__(
        self,
        jobs: JobStore,
        due: DueStore,
        grace_sec: float,
        quarantine: QuarantineStore | None = None,
    ) -> None:
        self._jobs = jobs
        self._due = due
        self._grace = timedelta(seconds=grace_sec)
        self._quarantine = quarantine

    def run(self, now: datetime) -> ReconcileResult:
        result = ReconcileResult()
        until_ms = to_ms(now - self._grace)
        for shard in range(UNINDEXED_SHARDS):
            for marker in self._jobs.unindexed(shard, until_ms):
                result.found += 1
                try:
                    self._repair(marker, now, result)
                except NotFoundError:
                    continue  # deleted meanwhile: nothing is due, and its marker went with it
                except Exception as exc:
                    if not is_record_fault(exc):
                        raise
                    self._park(marker, exc, now)
                    result.quarantined += 1
        return result

    def _repair(self, marker: Unindexed, now: datetime, result: ReconcileResult) -> None:
        job = self._jobs.get(marker.tenant_id, marker.job_id)
        if job.status == JobStatus.ACTIVE and job.next_run_time is not None:
            self._due.put(job.tenant_id, job.job_id, job.fire_time(job.next_run_time), now)
            result.repaired += 1
            logger.warning(
                "unindexed job repaired",
                job_id=job.job_id,
                next_run_time=job.next_run_time.isoformat(),
                marked_ms=marker.marked_ms,
            )
        self._jobs.clear_unindexed(marker.tenant_id, marker.job_id, marker.marked_ms)

    def _park(self, marker: Unindexed, error: Exception, now: datetime) -> None:
        """Quarantine a job that cannot be read, and clear its marker, so the next run does not
        meet it again; clearing the record marks it again."""
        if self._quarantine is not None:
            self._quarantine.park(
                table="jobs",
                key={"tenant_id": marker.tenant_id, "job_id": marker.job_id},
                where="reconciler",
                error=error,
                now=now,
                tenant_id=marker.tenant_id,
            )
        self._jobs.clear_unindexed(marker.tenant_id, marker.job_id, marker.marked_ms)
