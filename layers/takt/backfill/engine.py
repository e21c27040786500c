"""Starting, advancing and cancelling backfills (see the package's docstring)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from takt.models.ids import execution_id, new_ulid
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.observability import logger
from takt.schedule import next_after, occurrences
from takt.store.backfills import BackfillRecord, BackfillStore
from takt.store.errors import ConflictError, NotFoundError
from takt.store.ports import ExecutionWriter, JobReader

MAX_OCCURRENCES = 1000
"""A backfill covers at most this many occurrences: its record lists no occurrences (it keeps a
cursor), but a bound keeps one request from queueing months of an every-second job."""
MAX_PARALLEL = 20
_MICROSECOND = timedelta(microseconds=1)
_PUMP_TRIES = 5


class BackfillError(ValueError):
    """A backfill request that cannot be honoured; `field` names the request field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class BackfillLifecycle(Protocol):
    """What a backfill asks of the execution lifecycle (`takt.executions.lifecycle.Lifecycle`,
    which builds the `Backfiller` and hands itself in): declared here so this package imports
    nothing of the lifecycle that calls it back when its executions end."""

    def check_at(self, now: datetime, *, delay_sec: float = 0) -> int: ...

    def dispatch(
        self, record: ExecutionRecord, now: datetime, job: JobRecord | None = None
    ) -> None: ...

    def cancel(self, record: ExecutionRecord, now: datetime, *, reason: str) -> ExecutionRecord: ...


class Backfiller:
    def __init__(
        self,
        jobs: JobReader,
        executions: ExecutionWriter,
        store: BackfillStore,
        lifecycle: BackfillLifecycle,
    ) -> None:
        self._jobs = jobs
        self._executions = executions
        self._store = store
        self._lifecycle = lifecycle

    def start(
        self, job: JobRecord, start: datetime, end: datetime, max_parallel: int, now: datetime
    ) -> BackfillRecord:
        """Record a backfill of `job`'s occurrences in [start, end] and start its first ones."""
        if end < start:
            raise BackfillError("to", "to must not be before from")
        found = occurrences(
            job.parsed_schedule(),
            start - _MICROSECOND,
            end,
            limit=MAX_OCCURRENCES + 1,
            start_at=job.start_at,
            end_at=job.end_at,
        )
        if not found:
            raise BackfillError("from", "the job has no occurrence between from and to")
        if len(found) > MAX_OCCURRENCES:
            raise BackfillError(
                "to",
                f"the range holds more than {MAX_OCCURRENCES} occurrences; split it into "
                "several backfills",
            )
        record = BackfillRecord(
            tenant_id=job.tenant_id,
            job_id=job.job_id,
            backfill_id=f"bf_{new_ulid()}",
            start=start,
            end=end,
            max_parallel=max_parallel,
            total=len(found),
            created_at=now,
            updated_at=now,
        )
        self._store.create(record)
        return self.pump(job.tenant_id, job.job_id, record.backfill_id, now)

    def pump(self, tenant_id: str, job_id: str, backfill_id: str, now: datetime) -> BackfillRecord:
        """Start the backfill's next occurrences while fewer than `max_parallel` are open.

        Safe to run concurrently and to repeat: every execution it creates has the occurrence's
        deterministic id, one that exists is recognised as this backfill's (then it is open or
        done) or as another run's (then it counts as `existing`), and the record is saved over
        the version it read, read again on a conflict.
        """
        for _ in range(_PUMP_TRIES):
            record = self._store.get(tenant_id, job_id, backfill_id)
            if record.state != "running":
                return self._forget_finished(record, now)
            try:
                job = self._jobs.get(tenant_id, job_id)
            except NotFoundError:
                record.state = "cancelled"
                return self._save(record, now) or record
            advanced = self._advance(record, job, now)
            saved = self._save(advanced, now)
            if saved is not None:
                return saved
        return self._store.get(tenant_id, job_id, backfill_id)

    def cancel(
        self, tenant_id: str, job_id: str, backfill_id: str, now: datetime
    ) -> BackfillRecord:
        """Start no more of the backfill's occurrences and stop its open executions."""
        for _ in range(_PUMP_TRIES):
            record = self._store.get(tenant_id, job_id, backfill_id)
            if record.state != "running":
                return record
            record.state = "cancelled"
            saved = self._save(record, now)
            if saved is None:
                continue
            for exec_id in saved.open:
                try:
                    running = self._executions.get(tenant_id, exec_id)
                    if running.state.terminal or running.cancel_requested:
                        continue
                    self._lifecycle.cancel(running, now, reason=f"backfill {backfill_id} cancelled")
                except (NotFoundError, ConflictError):
                    continue
            # Read again: the end of each run stopped here pumped (and saved) the record.
            return self._forget_finished(self._store.get(tenant_id, job_id, backfill_id), now)
        return self._store.get(tenant_id, job_id, backfill_id)

    def _forget_finished(self, record: BackfillRecord, now: datetime) -> BackfillRecord:
        """A backfill that no longer runs starts nothing, but its `open` list still follows the
        runs it told to stop, so its `running` count falls to 0 as they end (each end pumps it).
        A conflict leaves the record to the next end's pump."""
        still = [x for x in record.open if self._is_open(record.tenant_id, x)]
        if still == record.open:
            return record
        settled = record.model_copy(deep=True)
        settled.open = still
        return self._save(settled, now) or record

    def _save(self, record: BackfillRecord, now: datetime) -> BackfillRecord | None:
        try:
            return self._store.save(record, now)
        except ConflictError:
            return None

    def _advance(self, record: BackfillRecord, job: JobRecord, now: datetime) -> BackfillRecord:
        """The record after starting what fits; the executions are created (and sent) here, the
        record is saved by the caller."""
        record = record.model_copy(deep=True)
        record.open = [x for x in record.open if self._is_open(record.tenant_id, x)]
        schedule = job.parsed_schedule()
        while len(record.open) < record.max_parallel:
            after = record.cursor if record.cursor is not None else record.start - _MICROSECOND
            scheduled = next_after(schedule, after, start_at=job.start_at, end_at=job.end_at)
            if scheduled is None or scheduled > record.end:
                break
            started = self._run(record, job, scheduled, now)
            record.cursor = scheduled
            if started is None:
                record.existing += 1
            else:
                record.started += 1
                if not started.state.terminal:
                    record.open.append(started.execution_id)
        if not record.open and self._finished(record, job):
            record.state = "done"
        return record

    def _finished(self, record: BackfillRecord, job: JobRecord) -> bool:
        after = record.cursor if record.cursor is not None else record.start - _MICROSECOND
        following = next_after(
            job.parsed_schedule(), after, start_at=job.start_at, end_at=job.end_at
        )
        return following is None or following > record.end

    def _is_open(self, tenant_id: str, exec_id: str) -> bool:
        try:
            return not self._executions.get(tenant_id, exec_id).state.terminal
        except NotFoundError:
            return False

    def _run(
        self, record: BackfillRecord, job: JobRecord, scheduled: datetime, now: datetime
    ) -> ExecutionRecord | None:
        """Create and send the occurrence's execution; this backfill's existing one if an
        earlier pump made it, None if another run (the scheduler's, a backfill's) did."""
        execution = ExecutionRecord.for_job(
            job,
            execution_id(job.job_id, scheduled),
            scheduled,
            ExecState.PENDING,
            now,
            trigger="backfill",
            backfill_id=record.backfill_id,
        )
        check_at = self._lifecycle.check_at(now)
        if not self._executions.create(execution, check_at_ms=check_at):
            existing = self._executions.get(job.tenant_id, execution.execution_id)
            return existing if existing.backfill_id == record.backfill_id else None
        logger.debug(
            "backfill execution created",
            job_id=job.job_id,
            execution_id=execution.execution_id,
            backfill_id=record.backfill_id,
        )
        self._lifecycle.dispatch(execution, now, job)
        return execution
