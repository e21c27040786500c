"""The store ports: what each engine needs of the tables, as `Protocol`s.

The engines (the claimer, the watchdog, the worker's runner, the execution lifecycle, and the
workflow and backfill engines the lifecycle builds) take these, not the DynamoDB stores, so each
one says exactly which reads and conditional writes its decisions rest on, and a test can hand it
an in-memory table that evaluates the same conditions (tests/support/fakes). The DynamoDB stores
of this package satisfy them structurally: nothing here is a base class, and `takt.wiring`, which
hands the real stores to the engines, is where mypy proves that they fit.

Each port lists only what its engine calls. Where one engine builds another (the claimer, the
watchdog and the runner each build a `Lifecycle`), its port extends the one it passes on. The
records these methods take and return are re-exported here, so an engine imports the store's
vocabulary from its ports and no concrete store module (an import-linter contract holds it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from takt.models.calendars import Calendar
from takt.models.records import ExecutionRecord, JobRecord
from takt.models.regions import RegionLease
from takt.store.due import DueItem, FairRead, UnreadableDue
from takt.store.executions import OpenCandidate, Transition
from takt.store.jobs import Advance, OutcomeNote
from takt.store.watches import ExecutionRef, Watch, Watched

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "Advance",
    "CalendarReader",
    "ClaimWatches",
    "ClaimerDue",
    "ClaimerJobs",
    "DueItem",
    "ExecutionRef",
    "ExecutionWriter",
    "FairRead",
    "JobReader",
    "LifecycleExecutions",
    "LifecycleJobs",
    "OpenCandidate",
    "OutcomeNote",
    "Quarantine",
    "RegionLease",
    "RegionLeases",
    "RunExecutions",
    "RunnerExecutions",
    "SweptDue",
    "SweptWatches",
    "Transition",
    "UnreadableDue",
    "Watch",
    "WatchdogDue",
    "WatchdogExecutions",
    "Watched",
]


# The jobs table


class JobReader(Protocol):
    """A job by its key: what the workflow and backfill engines read of the jobs table."""

    def get(self, tenant_id: str, job_id: str, *, consistent: bool = True) -> JobRecord:
        """The job; NotFoundError when there is none."""
        ...


class LifecycleJobs(JobReader, Protocol):
    """What the execution lifecycle writes on a job: its overlap slot (taken only from the
    holder the caller read) and its noted outcome (only ever forward in time). The worker's
    runner and the watchdog need no more of the jobs table than the lifecycle they build."""

    def take_slot(
        self, tenant_id: str, job_id: str, execution_id: str, *, expected: str | None
    ) -> bool:
        """Give the slot to `execution_id` if `expected` still holds it; False otherwise."""
        ...

    def release_slot(self, tenant_id: str, job_id: str, execution_id: str) -> None:
        """Free the slot if `execution_id` holds it; otherwise change nothing."""
        ...

    def outcome_settled(self, tenant_id: str, job_id: str) -> bool:
        """Whether a success would change nothing noted but the job's `last_*` pointers."""
        ...

    def record_outcome(
        self, tenant_id: str, job_id: str, execution_id: str, outcome: str, at: datetime
    ) -> OutcomeNote | None:
        """Note an ended execution on its job; None when a later one was noted already."""
        ...


class ClaimerJobs(LifecycleJobs, Protocol):
    """What a claim reads and writes of the jobs it fires, besides its lifecycle's needs."""

    def batch_read(
        self, keys: list[tuple[str, str]]
    ) -> tuple[dict[tuple[str, str], JobRecord], dict[tuple[str, str], Exception]]:
        """The jobs found, and those that cannot be read (by key, with why); missing are absent."""
        ...

    def advance(
        self,
        job: JobRecord,
        fired: datetime,
        next_run: datetime | None,
        *,
        active_execution: str | None = None,
        region_epoch: int | None = None,
    ) -> Advance:
        """Move the job past `fired`, fenced on its version, status and next run time (and on
        no later region epoch, when given)."""
        ...

    def note_unindexed(self, tenant_id: str, job_id: str, at: datetime) -> bool:
        """Ask the reconciler to check the job's due item (unless asked already)."""
        ...


# The executions table


class ExecutionWriter(Protocol):
    """The executions a backfill creates and reads back: each under its deterministic id,
    created only where none is (`attribute_not_exists`, DESIGN invariant 3)."""

    def get(self, tenant_id: str, execution_id: str, *, consistent: bool = True) -> ExecutionRecord:
        """The execution; NotFoundError when there is none."""
        ...

    def create(
        self, record: ExecutionRecord, *, check_at_ms: int | None, region_epoch: int | None = None
    ) -> bool:
        """Create the execution unless its id exists (False then); with `check_at_ms` it enters
        the watchdog's `open` index; a `region_epoch` is stamped on it."""
        ...


class RunExecutions(ExecutionWriter, Protocol):
    """What the workflow engine needs of the executions table: its runs' task items live in
    the same table, in a store of their own built on this one's client and name."""

    @property
    def retention_sec(self) -> int:
        """How long history is kept (the task items expire with their run)."""
        ...

    @property
    def client(self) -> DynamoDBClient:
        """The table's client, which the workflow runs' store shares."""
        ...

    @property
    def table(self) -> str:
        """The table's name, which the workflow runs' store shares."""
        ...


class LifecycleExecutions(RunExecutions, Protocol):
    """What the execution lifecycle reads and writes of the executions table: every change is
    one fenced `Transition`, which fails with ExecutionConflictError (carrying the execution
    as it now is) when its condition does not hold (DESIGN invariant 4)."""

    @property
    def open_shards(self) -> int:
        """How many shards the `open` index has."""
        ...

    def transition(self, tenant_id: str, execution_id: str, change: Transition) -> ExecutionRecord:
        """Apply `change` if its fence holds; the execution as it then is."""
        ...

    def first_queued(self, tenant_id: str, job_id: str) -> ExecutionRecord | None:
        """The job's oldest execution waiting for its overlap slot."""
        ...

    def newest_ended_after(
        self, tenant_id: str, job_id: str, execution_id: str | None, *, consistent: bool
    ) -> ExecutionRecord | None:
        """The job's newest ended execution later than `execution_id`."""
        ...


class RunnerExecutions(LifecycleExecutions, Protocol):
    """What the worker's runner needs besides its lifecycle's: a count of its fenced reports."""

    def record_fenced(self, tenant_id: str, execution_id: str) -> None:
        """Count a stale report that was rejected (never applied)."""
        ...


class WatchdogExecutions(LifecycleExecutions, Protocol):
    """What a watchdog sweep reads of the `open` index and writes to put executions in or out."""

    def open_candidates(self, shard: str, until_ms: int, limit: int = 500) -> list[OpenCandidate]:
        """The entries of one shard of the `open` index whose check time is at or before
        `until_ms` (candidates: each is read again before anything is written)."""
        ...

    def watched(self, refs: Sequence[ExecutionRef]) -> Watched:
        """Those of `refs` that have not ended and are outside the `open` index, and those not
        written at all."""
        ...

    def watch_open(self, ref: ExecutionRef, check_at_ms: int) -> bool:
        """Put an execution that has not ended into the `open` index; False otherwise."""
        ...

    def leave_open_index(self, job_key: str, sk: str) -> None:
        """Take an item out of the `open` index by its raw key, whatever it holds."""
        ...


# The due table and its watch lists


class ClaimWatches(Protocol):
    """A claim's watch lists: written before its executions are created (its step 0)."""

    def add(self, due_shard: int, check_at_ms: int, executions: Sequence[ExecutionRef]) -> None:
        """List `executions`, claimed from `due_shard`, for a check at `check_at_ms`."""
        ...


class SweptWatches(Protocol):
    """The watch lists a watchdog sweep checks when they come due, then deletes."""

    @property
    def shards(self) -> int:
        """How many watch partitions there are."""
        ...

    def due(self, shard: int, until: datetime) -> list[Watch]:
        """Watch lists of partition `shard` whose check time is at or before `until`."""
        ...

    def done(self, watch: Watch) -> None:
        """Delete a checked watch list."""
        ...


class ClaimerDue(Protocol):
    """What a claim reads and writes of the due index: the partition it claims, the items it
    deletes only if unchanged, the next occurrences it indexes, and its watch lists."""

    @property
    def watches(self) -> ClaimWatches:
        """The claims' watch lists."""
        ...

    def read_due(self, minute: datetime, shard: int, until: datetime) -> FairRead:
        """Everything in the partition due by `until`, oldest first."""
        ...

    def read_fair(
        self, minute: datetime, shard: int, until: datetime, page: int, pages: int
    ) -> FairRead:
        """A bounded read of the partition, with the tenants it left items of unread."""
        ...

    def put(self, tenant_id: str, job_id: str, due: datetime, now: datetime) -> None:
        """Index a job at `due` (idempotent)."""
        ...

    def put_many(self, entries: Sequence[tuple[str, str, datetime]], now: datetime) -> None:
        """Index each (tenant, job, due) of `entries`, as `put` does, in a few requests."""
        ...

    def delete_if_unchanged(self, item: DueItem) -> bool:
        """Delete `item` unless it was written again since it was read."""
        ...

    def settle(
        self, read: FairRead, finished: Sequence[DueItem], deleted: Sequence[DueItem] = ()
    ) -> list[DueItem]:
        """Of the items a claim of `read` finished, those it must still delete (with a claim
        cursor, those the cursor it moves does not pass; all of them without one); the items it
        already `deleted` count as finished and are never returned."""
        ...

    def delete_raw(self, bucket: str, due_key: str) -> None:
        """Delete an item that cannot be read, by its key."""
        ...


class SweptDue(Protocol):
    """What the ticker reads of the due index: which partitions of a minute hold items (its N
    base shards, and N*k for a minute split k ways), whether one is empty, and the watermark."""

    @property
    def shards(self) -> int:
        """N, the base shards of every minute."""
        ...

    def splits(self, minutes: Iterable[datetime]) -> dict[datetime, int]:
        """Each minute's split, read strongly consistent."""
        ...

    def partitions(self, minute: datetime) -> int:
        """N times the minute's split: every shard its items may be in."""
        ...

    def bucket_empty(self, minute: datetime, shard: int) -> bool:
        """Whether the partition holds no item at all (a strongly consistent read)."""
        ...

    def watermark(self) -> datetime | None:
        """The oldest minute that may still hold items."""
        ...

    def advance_watermark(self, to_minute: datetime) -> None:
        """Move the watermark forward only."""
        ...

    def expire_count(self, minute: datetime, now: datetime) -> None:
        """Have the count of a minute the watermark just passed expire (takt.store.due)."""
        ...


class WatchdogDue(Protocol):
    """What the watchdog needs of the due table: only the claims' watch lists."""

    @property
    def watches(self) -> SweptWatches:
        """The claims' watch lists."""
        ...


# Calendars and quarantine


class CalendarReader(Protocol):
    """A tenant's calendar by name: what a claim needs to black out occurrences."""

    def get(self, tenant_id: str, name: str) -> Calendar:
        """The calendar; NotFoundError when there is none."""
        ...


class Quarantine(Protocol):
    """Where an engine parks a record it cannot read or write (DESIGN invariant 9)."""

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
        """Record the item's key and why it was parked; the record's id."""
        ...


# The regions table


class RegionLeases(Protocol):
    """The region lease's item (takt.store.region_lease): what the fence reads and writes, each
    write conditional and returning the lease as written, or None when its condition failed."""

    def read(self) -> RegionLease | None:
        """The lease now, strongly consistent; None before the first."""
        ...

    def create(self, holder: str) -> RegionLease | None:
        """The first lease, `holder` at epoch 1, unless there is one."""
        ...

    def renew(self, holder: str, epoch: int) -> RegionLease | None:
        """Count a renewal, if `holder` still holds `epoch`."""
        ...

    def take_over(self, seen: RegionLease, holder: str) -> RegionLease | None:
        """`holder` at the next epoch, if the lease is still `seen`."""
        ...

    def promote(self, holder: str) -> RegionLease:
        """`holder` at the next epoch, whoever holds it (an operator's move)."""
        ...
