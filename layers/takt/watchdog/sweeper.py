"""One watchdog sweep over the sparse `open` index, shard by shard; never a table scan.

It first checks the claims' watch lists that have come due (`takt.store.watches`): a claim
creates its executions outside the index and lists them, and every listed execution that has not
ended by its check time is put in the index now, so this sweep handles it with the others.

For each candidate whose `check_at` has passed (by more than the clock margin), a consistent read
of the execution decides, and a write fenced on (state, attempt, lease token) acts:

- `pending` for too long (its message never reached or left SQS): send it again;
- `running` with an expired lease: the next attempt goes back to its lane, or the execution is
  `dead` when no attempts are left, or `cancelled` when a cancel was asked for (never retried);
  either way the execution's running slot (a tenant's cap, docs/FAIRNESS.md) is freed. Expired
  means past its expiry by more than the margin on this function's clock; the lease's worker
  stopped a margin *before* the expiry on its own clock (takt.worker.runner), so neither a next
  attempt nor `dead` is written while that worker could still be acting on it;
- an end written by an earlier sweep and still marked `follow_up`: that sweep died before what
  follows the end (the job's note, its notification, its slots, its backfill) was done, and this
  one does it (`Lifecycle.follow_up`, safe to redo);
- `retry_wait` whose retry time has come (waits longer than SQS's 900 s delay live here): send it;
- `queued` behind an overlap slot that is free again: start it;
- a workflow run (pending or running) that made no progress for a while: `RunEngine.check`.

Each write is one of the execution lifecycle's named operations (`takt.executions.lifecycle`:
`resend`, `recheck_at_expiry`, `expire`, `follow_up`, `release_retry`, `promote`, `postpone`);
this module only decides which one a candidate needs.

A candidate that cannot be read or written (a record fault: an item that does not parse, a write
DynamoDB refuses as invalid) is parked in quarantine and taken out of the `open` index, and the
sweep goes on with the others (DESIGN invariant 9); clearing the record puts it back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from takt.config import Settings, settings_slice
from takt.executions.lifecycle import Incidents, Lifecycle
from takt.models.ids import from_ms, scheduled_of, split_execution_id, to_ms
from takt.models.lanes import Lanes
from takt.models.records import ExecState, ExecutionRecord, JobStatus
from takt.models.regions import Fence, Fenced, Unfenced
from takt.observability import log_keys, logger
from takt.occurrences import fires_at
from takt.parallel import each_in_context
from takt.store.errors import ConflictError, NotFoundError, is_record_fault
from takt.store.ports import (
    ExecutionRef,
    LifecycleJobs,
    OpenCandidate,
    Quarantine,
    Watch,
    WatchdogDue,
    WatchdogExecutions,
)

# Watch lists checked at once (each a batch read or a few, then a delete).
WATCH_THREADS = 16


@dataclass
class SweepResult:
    candidates: int = 0
    resent: int = 0
    lease_expired: int = 0
    dead: int = 0
    retries_released: int = 0
    queued_released: int = 0
    cancelled: int = 0
    runs_checked: int = 0
    quarantined: int = 0
    # Ends an earlier sweep wrote and died before following through (`Lifecycle.follow_up`).
    followed_up: int = 0
    # Watch lists checked, and the executions on them found open and indexed.
    watches: int = 0
    watched_open: int = 0
    # The region fence stopped the sweep: another region holds the region lease.
    fenced: bool = False


@dataclass(frozen=True)
class WatchdogSettings:
    """The settings the watchdog reads (`of` cuts them from `Settings`)."""

    clock_margin_sec: float
    pending_resend_after_sec: float
    lease_sec: float  # the lifecycle's
    tenants_table: str  # the lifecycle's backfills

    @classmethod
    def of(cls, settings: Settings) -> WatchdogSettings:
        return settings_slice(cls, settings)


class Watchdog:
    def __init__(
        self,
        settings: WatchdogSettings,
        jobs: LifecycleJobs,
        due: WatchdogDue,
        executions: WatchdogExecutions,
        lanes: Lanes,
        release_slot: Callable[[str, str], None] | None = None,
        notifier: Incidents | None = None,
        quarantine: Quarantine | None = None,
        fence: Fence | None = None,
    ) -> None:
        self._settings = settings
        self._fence = fence or Unfenced()
        self._quarantine = quarantine
        self._executions = executions
        self._watches = due.watches
        self._release_slot = release_slot
        self._jobs = jobs
        self._lifecycle = Lifecycle(settings, jobs, executions, lanes, notifier=notifier)

    def sweep(self, now: datetime) -> SweepResult:
        """One pass over the watch lists and the `open` index; nothing at all in a region that
        may not act (the region fence), and the rest of the pass skipped once it no longer may."""
        result = SweepResult()
        if not self._may_act(result):
            return result
        cutoff = to_ms(now - timedelta(seconds=self._settings.clock_margin_sec))
        self._check_watches(cutoff, result)
        for shard in range(self._executions.open_shards):
            if not self._may_act(result):
                return result
            for item in self._executions.open_candidates(str(shard), cutoff):
                result.candidates += 1
                try:
                    self._check(item, now, cutoff, result)
                except (ConflictError, NotFoundError):
                    # Someone acted first: the index was stale or a worker finished meanwhile.
                    continue
                except Exception as exc:
                    if not is_record_fault(exc):
                        raise
                    self._park(item, str(shard), exc, now)
                    result.quarantined += 1
        return result

    def _may_act(self, result: SweepResult) -> bool:
        """Whether this region holds the region lease (a cached proof); `fenced` noted if not."""
        try:
            self._fence.epoch()
        except Fenced:
            result.fenced = True
            return False
        return True

    def _check_watches(self, cutoff: int, result: SweepResult) -> None:
        """Index every execution of the watch lists due by `cutoff` that has not ended, at
        `cutoff` (so this sweep's pass over the index finds it), then delete the list.

        The partitions are read and their lists checked WATCH_THREADS at a time: after the top
        of the hour a sweep meets thousands of lists, each a few reads in a row, and the pass
        over the index (expired leases) waits for them."""
        until = from_ms(cutoff)

        def check(watch: Watch) -> int:
            found = self._executions.watched(watch.executions)
            indexed = sum(1 for ref in found.unended if self._executions.watch_open(ref, cutoff))
            indexed += sum(1 for ref in found.unwritten if self._write_unstarted(ref, cutoff))
            self._watches.done(watch)
            return indexed

        def shard_checked(shard: int) -> tuple[int, int]:
            watches = self._watches.due(shard, until)
            return len(watches), sum(check(watch) for watch in watches)

        shards = range(self._watches.shards)
        for checked, indexed in each_in_context(shard_checked, shards, WATCH_THREADS, name="watch"):
            result.watches += checked
            result.watched_open += indexed

    def _write_unstarted(self, ref: ExecutionRef, cutoff: int) -> bool:
        """Write, pending and in the `open` index at `cutoff` (so this sweep sends it again), an
        occurrence its claim left to the worker's lease (`Settings.record_at_lease`) that no
        worker has leased by its check: its message was lost, or is still waiting in its lane
        (then the copy this sends is a duplicate the lease absorbs). Written from the job as it
        now is, and only while the job, active, still fires at that instant: an edit since
        decided the occurrence, as the worker's lease-time check would have (DESIGN invariants
        1 and 8). False when nothing was written (the job moved on, or a worker wrote it
        meanwhile: its record is then the watch's, and a lease outlives the resend wait)."""
        try:
            job_id, _ = split_execution_id(ref.execution_id)
            scheduled = scheduled_of(ref.execution_id)
            job = self._jobs.get(ref.tenant_id, job_id)
        except (ValueError, NotFoundError):
            return False
        if job.status != JobStatus.ACTIVE or not fires_at(job, scheduled):
            return False
        now = from_ms(cutoff)
        record = ExecutionRecord.for_job(job, ref.execution_id, scheduled, ExecState.PENDING, now)
        written = self._executions.create(record, check_at_ms=cutoff)
        if written:
            logger.warning(
                "claimed occurrence not leased by its check: written pending to send again",
                execution_id=ref.execution_id,
            )
        return written

    def _check(self, item: OpenCandidate, now: datetime, cutoff: int, result: SweepResult) -> None:
        """Read one candidate of the `open` index consistently, and act on it."""
        if item.tenant_id is None or item.execution_id is None:
            raise ValueError(f"the open index holds {item.job_key} without its ids")
        record = self._executions.get(item.tenant_id, item.execution_id)
        with log_keys(job_id=record.job_id, execution_id=item.execution_id):
            self._act(record, now, cutoff, result)

    def _park(self, item: OpenCandidate, shard: str, error: Exception, now: datetime) -> None:
        """Quarantine a candidate and take it out of the `open` index, so later sweeps do not
        meet it again; the record keeps its shard, which clearing puts back."""
        key = {"job_key": item.job_key, "sk": item.sk}
        if self._quarantine is not None:
            self._quarantine.park(
                table="executions",
                key=key,
                where="watchdog",
                error=error,
                now=now,
                tenant_id=key["job_key"].partition("#")[0],
                restore={"open_shard": shard},
            )
        self._executions.leave_open_index(key["job_key"], key["sk"])

    def _act(
        self, record: ExecutionRecord, now: datetime, cutoff: int, result: SweepResult
    ) -> None:
        if record.follow_up and record.state.terminal:
            # A sweep ended it and died before what follows the end was done: finish that.
            self._free_running_slot(record)
            self._lifecycle.follow_up(record, now)
            result.followed_up += 1
        elif record.run_tasks is not None and record.state != ExecState.QUEUED:
            # A workflow run that made no progress for a while: re-evaluate it (the backstop).
            self._lifecycle.runs.check(record, now)
            result.runs_checked += 1
        elif record.state == ExecState.PENDING:
            self._lifecycle.resend(record, now)
            result.resent += 1
        elif record.state == ExecState.RUNNING:
            self._check_lease(record, now, cutoff, result)
        elif record.state == ExecState.RETRY_WAIT:
            if record.retry_at is None or to_ms(record.retry_at) > cutoff:
                return
            self._lifecycle.release_retry(record, now)
            result.retries_released += 1
        elif record.state == ExecState.QUEUED:
            if self._lifecycle.promote(record.tenant_id, record.job_id, now):
                result.queued_released += 1
            else:
                self._lifecycle.postpone(record, now)

    def _check_lease(
        self, record: ExecutionRecord, now: datetime, cutoff: int, result: SweepResult
    ) -> None:
        """A running execution: look again at a live lease when it expires, and take an
        expired one back (`Lifecycle.expire`), freeing its running slot."""
        if record.lease_expires_at is None:
            return
        if record.lease_expires_at >= cutoff:
            # A lease and its heartbeats leave `check_at` where the execution became
            # runnable (`rules.lease_moves_check_at`), so a run longer than the resend wait
            # is found here once per lease.
            self._lifecycle.recheck_at_expiry(record)
            return
        logger.warning("lease expired", attempt=record.attempt)
        outcome = self._lifecycle.expire(record, now)
        if outcome == ExecState.CANCELLED:
            result.cancelled += 1
        elif outcome == ExecState.DEAD:
            result.dead += 1
        else:
            result.lease_expired += 1
        self._free_running_slot(record)

    def _free_running_slot(self, record: ExecutionRecord) -> None:
        """Free the tenant's running slot an expired lease held (docs/FAIRNESS.md)."""
        if self._release_slot is not None:
            self._release_slot(record.tenant_id, record.execution_id)
