"""A claimer: dispatches everything due in one (minute bucket, shard) partition of the due index.

The steps for a batch of due items, in this order, make a crash at any point harmless
(DESIGN invariants 1-3):

0. list the executions it is about to create in a watch item (`takt.store.watches`): they are
   created outside the watchdog's `open` index, and the watchdog checks the list when the index
   would have had it look, indexing those that have not ended (a message lost, a worker dead);
1. create each occurrence's execution under its deterministic id (`attribute_not_exists`), or,
   with `record_at_lease`, leave an `allow` run's record to the worker that leases it (its
   message says `recorded: false`; the watch list's check writes one nobody leased);
2. send the pending executions to their lanes (a resend after a crash is a duplicate message,
   which the worker's lease condition absorbs);
3. index the job at its next occurrence (before the job points there, so it is never unindexed;
   an unconditional put, so 25 go out in one request);
4. advance the job, conditional on it still pointing at the fired occurrence;
5. delete the fired due item (with a claim cursor, `Settings.due_cursor`: move the partition's
   cursor past the run of items the claim finished, and delete only the finished items it does
   not pass; takt.store.due).

A crash before step 4 leaves the due item and the job as they were, so the next tick (one second
later) redoes the batch and finds steps 1-3 already done (and writes another watch item, which
costs a write and nothing else). An execution created and never sent (the claim died, and an edit
then moved the job off the item) is found by its watch item's check. A crash after step 4
leaves a stale due item, which a later claim deletes.

Two claims of one partition may run at once (a tick's claim outliving its tick, a stalled
claimer): between one's step 3 and step 4, its new due item is after the occurrence the job
points at, and the other must not take it for stale, or the job, once advanced, points at an
occurrence nothing indexes and never runs again. So a claim deletes as stale only an item at or
before its job's occurrence (or of a job gone, paused or done); one after it waits until the job
moved past it, and one still there after the grace period has the job checked by the reconciler
(`_ahead_of_its_job`). A claim whose advance finds the job moved on by another claim indexes it
where it now points (`_reindex`).

One item that cannot be read or written (a record fault, `takt.store.errors.is_record_fault`: a
job whose stored time cannot be read back, an execution DynamoDB refuses) is isolated: parked in
quarantine, its due item removed so no later claim meets it again, and the rest of the batch goes
on (DESIGN invariant 9). Any other failure still fails the claim, which the next tick redoes.

Each step is a phase over the whole batch, and a phase's writes go out `claimer_threads` at a
time (`Phases`): a claim of a thousand items is then bound by the slowest of a few hundred
round trips in a row rather than by three thousand of them (docs/CAPACITY.md). The phases stay in
order, and a phase starts only once every write of the one before succeeded, so a crash leaves
what the sequential order leaves: some of one phase done, nothing of a later one. Step 5 runs
once every advance is done (an item's due entry is deleted, or passed, only after its own job
advanced, which is the only order the two need).

In a multi-region deployment (issue 27) a claim acts only while its region holds the region
lease (`takt.regions.fence`): it asks the fence before anything else, and again before it sends
and before it advances, raising `Fenced` when the region may not act. It stamps the epoch it
holds on the executions it creates, on each job advance (which is refused once a later epoch
advanced the job: the claim then stops, `Fenced`) and on its lane messages. With one region the
fence is `Unfenced` and the claim writes what it always wrote.
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TypeVar

from takt.config import Settings, TenantLimits, settings_slice
from takt.executions.lifecycle import Lifecycle
from takt.fairness.adaptive import LaneGauge, LaneState, claim_budget, fast_headroom
from takt.fairness.shares import fair_take
from takt.models.calendars import Calendar
from takt.models.ids import execution_id, to_ms
from takt.models.lanes import Lanes, Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord, JobStatus
from takt.models.regions import Fence, Fenced, Unfenced
from takt.observability import logger
from takt.occurrences import (
    FiringPlan,
    Replacement,
    claimable_ahead,
    decide,
    overlap_rule,
    plan_firing,
)
from takt.store.errors import ConflictError, NotFoundError, is_record_fault
from takt.store.ports import (
    CalendarReader,
    ClaimerDue,
    ClaimerJobs,
    DueItem,
    ExecutionRef,
    FairRead,
    LifecycleExecutions,
    Quarantine,
    UnreadableDue,
)

T = TypeVar("T")
R = TypeVar("R")
SEND_BATCH = 10
# A bounded claim reads pages of at least this many due items: a tenant with more due at one
# instant in one partition counts as backlogged (docs/FAIRNESS.md), so the page must be well
# above what an ordinary tenant has due at once there.
FAIR_READ_PAGE = 50
# A claim that takes a backlog's items should end inside its tick's second (Claimer._budget).
CLAIM_TIME_SEC = 1.0
# The top-of-minute burst: the items due in a minute's first second (`burst_ahead_sec`).
BURST_SECOND = timedelta(seconds=1)
# How many next occurrences one step-3 request indexes (BatchWriteItem's most items).
INDEX_BATCH = 25
# SQS's longest DelaySeconds.
MAX_SQS_DELAY_SEC = 900
# How many times one item's advance re-reads a job edited meanwhile (each edit moves its
# version on; a job edited this often in one claim is left to the next tick).
MAX_ADVANCE_TRIES = 3


@dataclass
class ClaimResult:
    due: int = 0
    dispatched: int = 0
    skipped: int = 0
    stale: int = 0
    left: int = 0
    # Items parked in quarantine by this claim (records it could not read or write).
    quarantined: int = 0
    lags_ms: list[int] = field(default_factory=list)
    # CPU the claim's write threads spent, apart from the claiming thread's own: a Lambda is
    # billed for its whole process, so a meter that times the claiming thread adds this.
    helper_cpu_sec: float = 0.0

    def add(self, other: ClaimResult) -> None:
        self.due += other.due
        self.dispatched += other.dispatched
        self.skipped += other.skipped
        self.stale += other.stale
        self.left += other.left
        self.quarantined += other.quarantined
        self.lags_ms.extend(other.lags_ms)
        self.helper_cpu_sec += other.helper_cpu_sec


class Phases:
    """Runs one phase of a claim: an action on every item, `threads` at a time.

    Every action of a phase finishes (or fails) before `each` returns, and the first failure is
    raised only then, so the caller never starts the next phase after a failed write, and no write
    of this phase is still in flight when it does. Each action runs in a copy of the caller's
    context (`contextvars`), so what the caller's context carries follows the work into the pool's
    threads. With one thread, or one item, the actions run in the caller's thread, in order,
    stopping at the first failure: exactly the sequential claim.
    """

    def __init__(self, threads: int) -> None:
        self._pool = (
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="claim-write")
            if threads > 1
            else None
        )

    def each(self, action: Callable[[T], R], items: Sequence[T], result: ClaimResult) -> list[R]:
        """`action` on every item; their results in order. Helper CPU is added to `result`."""
        if self._pool is None or len(items) <= 1:
            return [action(item) for item in items]
        futures = [
            self._pool.submit(contextvars.copy_context().run, _timed, action, item)
            for item in items
        ]
        wait(futures)
        outcomes: list[R] = []
        for future in futures:
            value, cpu_sec = future.result()
            result.helper_cpu_sec += cpu_sec
            outcomes.append(value)
        return outcomes


def claim_horizon(settings: ClaimerSettings, minute: datetime, now: datetime) -> datetime:
    """The latest due time a claim of `minute`'s bucket at `now` takes: `dispatch_ahead_sec`
    ahead, and, from `burst_ahead_sec` before the minute, the whole of its first second (the
    top-of-minute burst; docs/CAPACITY.md). The ticker's probes use the same horizon."""
    until = now + timedelta(seconds=settings.dispatch_ahead_sec)
    burst_from = minute - timedelta(seconds=settings.burst_ahead_sec)
    if settings.burst_ahead_sec > 0 and burst_from <= now and until < minute + BURST_SECOND:
        # Due keys are in milliseconds: the last one of the minute's first second.
        return minute + BURST_SECOND - timedelta(milliseconds=1)
    return until


def _ahead_of_its_job(job: JobRecord, item: DueItem) -> bool:
    """Whether `item` is due after the occurrence an active job points at: then it may be the
    next due item a claim of that occurrence put before moving the job there (step 3 before
    step 4). Compared with the nominal occurrence, not its firing: a jitter offset is never
    negative, so every later occurrence fires after it, whatever the jitter."""
    nominal = job.next_run_time
    return job.status == JobStatus.ACTIVE and nominal is not None and item.due > nominal


def _note_created(firing: _Firing, record: ExecutionRecord, outgoing: list[Outgoing]) -> None:
    """What one execution the firing created (or found) asks of the claim: it names the
    firing's run, holds the job's overlap slot while open, and is sent (a pending execution)
    or started as a workflow run."""
    job = firing.job
    firing.run_ids.append(record.execution_id)
    # Not only a pending record holds the slot: after a crashed try, a worker may already
    # be running the execution this retry found, and the next occurrence must see it busy.
    open_run = record.state != ExecState.QUEUED and not record.state.terminal
    if overlap_rule(job.overlap).holds_slot and open_run:
        firing.holder = record.execution_id
    if record.state == ExecState.PENDING and record.run_tasks is not None:
        firing.runs.append(record)
    elif record.state == ExecState.PENDING:
        outgoing.append(Outgoing.of(record))


def _send_batches(outgoing: list[Outgoing]) -> list[list[Outgoing]]:
    """The messages as SQS batches: up to ten, all for one lane (one request each)."""
    by_lane: dict[str, list[Outgoing]] = {}
    for message in outgoing:
        by_lane.setdefault(message.lane, []).append(message)
    return [
        messages[i : i + SEND_BATCH]
        for messages in by_lane.values()
        for i in range(0, len(messages), SEND_BATCH)
    ]


def _unparked(firings: list[_Firing], result: ClaimResult) -> list[_Firing]:
    """The firings no record fault parked; the parked ones are counted in `result`."""
    result.quarantined += sum(1 for f in firings if f.quarantined)
    return [f for f in firings if not f.quarantined]


def _ways(partitions: int | None, shards: int) -> int:
    """How many partitions of its minute a claim's tick claims: what the ticker said (N*k of a
    minute it knows is split k ways), else the minute's N base shards."""
    return partitions or shards


def _delayed(outgoing: Outgoing, now: datetime, elapsed_sec: float, ahead_sec: float) -> Outgoing:
    """The message, when it was claimed for the burst (due more than `ahead_sec` after `now`),
    delayed by SQS for the whole seconds left until its time once it is sent (`elapsed_sec`
    after `now`): it reaches the workers just before its second, and the worker holds it for
    the rest, as it holds any message claimed ahead."""
    until = (outgoing.message.scheduled_time - now).total_seconds()
    if until <= ahead_sec or until - elapsed_sec < 1 or outgoing.delay_sec:
        return outgoing
    return replace(outgoing, delay_sec=min(MAX_SQS_DELAY_SEC, math.floor(until - elapsed_sec)))


def _advanced_later(stored: int | None, epoch: int | None) -> bool:
    """Whether a refused advance met a job that a region holding a later epoch advanced: this
    region lost the lease (its claim stops), however its cached proof reads."""
    return stored is not None and epoch is not None and stored > epoch


def _next_entry(firing: _Firing) -> tuple[str, str, datetime]:
    """The due item a recurring firing's step 3 puts: (tenant, job, next firing time)."""
    job, next_run = firing.job, firing.plan.next_run
    assert next_run is not None
    return job.tenant_id, job.job_id, job.fire_time(next_run)


def _timed(action: Callable[[T], R], item: T) -> tuple[R, float]:
    start = time.thread_time()
    return action(item), time.thread_time() - start


@dataclass
class _Firing:
    item: DueItem
    job: JobRecord
    # The occurrence's nominal instant, its identity; the due item holds its (jittered) firing.
    nominal: datetime
    plan: FiringPlan
    run_ids: list[str] = field(default_factory=list)
    holder: str | None = None
    runs: list[ExecutionRecord] = field(default_factory=list)  # workflow runs to start
    # What creating this firing's executions did; one task writes it, the claim sums them.
    result: ClaimResult = field(default_factory=ClaimResult)
    # Set when one of its writes met a record fault: its later steps are not taken.
    quarantined: bool = False


@dataclass(frozen=True)
class ClaimerSettings:
    """The settings the claimer reads (`of` cuts them from `Settings`)."""

    dispatch_ahead_sec: float
    burst_ahead_sec: float
    due_grace_sec: float
    due_shards: int
    claim_max_items: int | None
    claim_read_pages: int
    claimer_threads: int
    fair_queue_sec: float | None
    overflow_lane: str
    tenant_limits: TenantLimits
    tenant_limit_overrides: Mapping[str, TenantLimits]
    # The lifecycle's: its leases and resend wait, and its backfills' table.
    lease_sec: float
    pending_resend_after_sec: float
    tenants_table: str
    # Leave an `allow` occurrence's record to the worker that leases it (module docstring).
    record_at_lease: bool = False

    @classmethod
    def of(cls, settings: Settings) -> ClaimerSettings:
        return settings_slice(cls, settings)

    def limits_for(self, tenant_id: str) -> TenantLimits:
        return self.tenant_limit_overrides.get(tenant_id, self.tenant_limits)


class Claimer:
    def __init__(
        self,
        settings: ClaimerSettings,
        jobs: ClaimerJobs,
        due: ClaimerDue,
        executions: LifecycleExecutions,
        lanes: Lanes,
        calendars: CalendarReader | None = None,
        gauge: LaneGauge | None = None,
        quarantine: Quarantine | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        fence: Fence | None = None,
    ) -> None:
        self._settings = settings
        # The region fence (takt.regions.fence): a claim acts only while this region holds the
        # region lease, and stamps the epoch it holds on what it writes. Unfenced with one region.
        self._fence = fence or Unfenced()
        # Times a claim, so the delays of the burst's messages count from when they are sent.
        self._monotonic = monotonic
        self._quarantine = quarantine
        self._calendars = calendars
        self._gauge = gauge
        # By how many partitions of its minute a claim's tick claims (N, or N*k for a minute
        # split k ways): the lane sample the last such claim sized its budget from, and that
        # budget, which the next one's read takes as its page size. Kept apart because a claim
        # of a split minute has its share of the lanes' room divided k times more ways.
        self._budgets: dict[int, tuple[int, int]] = {}
        # How long the last claim that took a backlog's items took, by the gauge's clock.
        self._last_claim_sec = 0.0
        self._jobs = jobs
        self._due = due
        self._executions = executions
        self._lanes = lanes
        self._lifecycle = Lifecycle(settings, jobs, executions, lanes)
        self._phases = Phases(settings.claimer_threads)

    def claim(
        self, minute: datetime, shard: int, now: datetime, partitions: int | None = None
    ) -> ClaimResult:
        """Dispatch what is due in the partition; Fenced, before any write, when this region
        may not act, and between phases when it lost the lease meanwhile. `partitions` is how
        many partitions of the minute the tick claims (the ticker's `ClaimTask.partitions`;
        N when not given): a backlog's share of the lanes' room is divided between them."""
        epoch = self._fence.epoch()
        result = ClaimResult()
        claimed_from = self._monotonic()
        ways = _ways(partitions, self._settings.due_shards)
        read, items, backlogged = self._take(minute, shard, now, ways, result)
        if not items:
            return result
        started = self._gauge.monotonic() if self._gauge is not None else 0.0
        firings, stale = self._firings(items, now, result)
        deleted = self._phases.each(self._delete_stale, stale, result)
        gone = [item for item, ok in zip(stale, deleted, strict=True) if ok]
        result.stale += len(stale)

        self._watch(firings, shard, now)
        nothing: list[Outgoing] = []
        created = self._phases.each(
            self._isolated(
                lambda f: self._create_executions(f, now, f.result, epoch), nothing, now
            ),
            firings,
            result,
        )
        outgoing = [message for messages in created for message in messages]
        for firing in firings:
            result.add(firing.result)
        firings = _unparked(firings, result)
        if outgoing:
            self._still_holding(epoch)
            stamped = [replace(o, region_epoch=epoch) for o in outgoing]
            self._dispatch(stamped, firings, backlogged, now, claimed_from, ways, result)
        for firing in firings:
            for run in firing.runs:
                # A workflow's run is not sent: it dispatches its root tasks (takt.workflows).
                self._lifecycle.runs.start(run, now, firing.job)
        fired = self._move_on(firings, now, epoch, result)
        # Step 5: what the cursor does not pass is deleted (everything, without a cursor).
        self._phases.each(self._delete_stale, self._due.settle(read, fired, gone), result)
        if backlogged and self._gauge is not None:
            self._last_claim_sec = self._gauge.monotonic() - started
        return result

    def _move_on(
        self, firings: list[_Firing], now: datetime, epoch: int | None, result: ClaimResult
    ) -> list[DueItem]:
        """Steps 3 and 4: the firings' next occurrences indexed, then their jobs advanced; the
        due items of those finished with (`_advance`)."""
        recurring = [f for f in firings if f.plan.next_run is not None]
        batches = [recurring[i : i + INDEX_BATCH] for i in range(0, len(recurring), INDEX_BATCH)]
        self._phases.each(lambda batch: self._index_next(batch, now), batches, result)
        firings = _unparked(firings, result)
        self._still_holding(epoch)
        advanced = self._phases.each(
            self._isolated(lambda f: self._advance(f, now, epoch), False, now), firings, result
        )
        _unparked(firings, result)
        return [f.item for f, ok in zip(firings, advanced, strict=True) if ok]

    def _still_holding(self, epoch: int | None) -> None:
        """Fenced unless this region still acts at the claim's epoch (a cached proof, no read)."""
        if self._fence.epoch() != epoch:
            raise Fenced(f"the region lease moved on from epoch {epoch} during the claim")

    def _watch(self, firings: list[_Firing], shard: int, now: datetime) -> None:
        """Step 0: list the executions the firings may create outside the `open` index, by the
        second the watchdog would look at each (`_create`): one write per check second, not per
        execution. Every occurrence a firing may run is listed; the check passes over those that
        end up skipped, queued or ended."""
        by_second: dict[int, list[ExecutionRef]] = {}
        for firing in firings:
            job = firing.job
            if job.tasks is not None:
                continue  # a workflow's run is created in the index
            for scheduled in firing.plan.run:
                check_at = self._check_at(scheduled, now)
                ref = ExecutionRef(job.tenant_id, execution_id(job.job_id, scheduled))
                by_second.setdefault(check_at // 1000, []).append(ref)
        for second, refs in sorted(by_second.items()):
            self._due.watches.add(shard, second * 1000 + 999, refs)

    def _check_at(self, scheduled: datetime, now: datetime) -> int:
        """When the watchdog looks at an execution of `scheduled` created at `now`: a message
        claimed ahead is first taken at its time, so the wait counts from then."""
        ahead_sec = max(0.0, (scheduled - now).total_seconds())
        return self._lifecycle.check_at(now, delay_sec=ahead_sec)

    def _take(
        self, minute: datetime, shard: int, now: datetime, ways: int, result: ClaimResult
    ) -> tuple[FairRead, list[DueItem], frozenset[str]]:
        """The read, the due items this claim takes (up to `claim_horizon`), and the backlogged
        tenants among them: everything due, or with `claim_max_items` a bounded share of the
        backlog (docs/FAIRNESS.md). The items that cannot be read are parked."""
        until = claim_horizon(self._settings, minute, now)
        bound = self._settings.claim_max_items
        backlogged: frozenset[str] = frozenset()
        if bound is None:
            read = self._due.read_due(minute, shard, until)
            items = read.items
            result.due = len(items)
        else:
            # Pages as large as the last budget: a claim may take that many of a backlog.
            page = max(self._budgets.get(ways, (-1, bound))[1], FAIR_READ_PAGE)
            read = self._due.read_fair(minute, shard, until, page, self._settings.claim_read_pages)
            result.due = len(read.items)
            backlogged = read.backlogged
            # Only a backlog is sized by the lanes: an idle or quiet claim measures nothing.
            budget = self._budget(bound, ways) if backlogged else bound
            items, later = self._bounded(read, budget)
            result.left += len(later)
        for unreadable in read.unreadable:
            self._park_due_item(unreadable, now, result)
        return read, items, backlogged

    def _firings(
        self, items: list[DueItem], now: datetime, result: ClaimResult
    ) -> tuple[list[_Firing], list[DueItem]]:
        """The claim's items as firings to make and stale items to delete; the items whose job
        cannot be read or planned are parked, and the young items that match no job yet left."""
        jobs, unreadable = self._jobs.batch_read([(i.tenant_id, i.job_id) for i in items])
        firings: list[_Firing] = []
        stale: list[DueItem] = []
        for item in items:
            job = jobs.get((item.tenant_id, item.job_id))
            nominal = job.next_run_time if job is not None else None
            unread = unreadable.get((item.tenant_id, item.job_id))
            if unread is not None:
                self._park_job(item, unread, now, result)
            elif (
                job is not None
                and nominal is not None
                and job.status == JobStatus.ACTIVE
                and job.fire_time(nominal) == item.due
            ):
                firing = self._firing(item, job, nominal, now, result)
                if firing is not None:
                    firings.append(firing)
            elif self._stale(item, job, now, result):
                stale.append(item)
        return firings, stale

    def _firing(
        self, item: DueItem, job: JobRecord, nominal: datetime, now: datetime, result: ClaimResult
    ) -> _Firing | None:
        """The firing of an item its job points at; None when it is left for the regular claim
        (read for the burst) or parked (its job cannot be planned)."""
        # Items beyond this were read for the burst (`claim_horizon`).
        regular = now + timedelta(seconds=self._settings.dispatch_ahead_sec)
        if item.due > regular and not claimable_ahead(job):
            result.left += 1
            return None
        try:
            plan = plan_firing(job, nominal, now)
        except Exception as exc:
            if not is_record_fault(exc):
                raise
            self._park_job(item, exc, now, result)
            return None
        return _Firing(item, job, nominal, plan)

    def _stale(
        self, item: DueItem, job: JobRecord | None, now: datetime, result: ClaimResult
    ) -> bool:
        """Whether an item its job does not point at is stale (to delete); the others are left."""
        old = to_ms(now) - item.written_ms >= int(self._settings.due_grace_sec * 1000)
        if job is not None and _ahead_of_its_job(job, item):
            # The next due item of an advance still in flight (another claim's step 3 done,
            # its step 4 not yet): deleting it would leave that job, once advanced, pointing
            # at an occurrence nothing indexes. It is stale once the job moved past it. Still
            # here after the grace period, the advance may have died: the reconciler is asked
            # to check the job.
            result.left += 1
            if old:
                self._jobs.note_unindexed(job.tenant_id, job.job_id, now)
            return False
        if not old:
            # Young and not matching: a create or update may still be writing its job.
            result.left += 1
        return old

    def _dispatch(
        self,
        outgoing: list[Outgoing],
        firings: list[_Firing],
        backlogged: frozenset[str],
        now: datetime,
        claimed_from: float,
        ways: int,
        result: ClaimResult,
    ) -> None:
        """Step 2: the claim's messages sent, each claimed for the burst delayed to its second
        as counted from when it is sent; the lag of each firing that made a run recorded."""
        elapsed = self._monotonic() - claimed_from
        ahead = self._settings.dispatch_ahead_sec
        delayed = [_delayed(o, now, elapsed, ahead) for o in outgoing]
        self._send(delayed, backlogged, ways, result)
        result.lags_ms.extend(max(0, to_ms(now) - to_ms(f.item.due)) for f in firings if f.run_ids)

    def _send(
        self, outgoing: list[Outgoing], backlogged: frozenset[str], ways: int, result: ClaimResult
    ) -> None:
        """Step 2: the claim's messages to their lanes, the backlogged tenants' shaped first."""
        if backlogged and self._gauge is not None:
            outgoing = self._shaped(outgoing, backlogged, self._gauge.state(), ways)
        self._phases.each(self._lanes.send, _send_batches(outgoing), result)
        result.dispatched += len(outgoing)
        if self._gauge is not None:
            for message in outgoing:
                self._gauge.sent(message.lane, 1)

    def _budget(self, floor: int, ways: int) -> int:
        """How many backlogged tenants' items this claim, one of `ways` claims of its minute in
        its tick, takes: `floor` (claim_max_items), or, with the lanes measured
        (fair_queue_sec), its share of what keeps them just ahead of their drain
        (takt.fairness.adaptive)."""
        queue_sec = self._settings.fair_queue_sec
        if self._gauge is None or queue_sec is None:
            return floor
        state = self._gauge.state()
        sample, last = self._budgets.get(ways, (-1, floor))
        if state.sample == sample:
            return last
        if self._last_claim_sec > CLAIM_TIME_SEC:
            # The tick waits for its claims, and a quiet tenant's next claim for the tick:
            # a claim past its time halves the budget, whatever the lanes could take.
            budget = max(floor, last // 2)
        else:
            budget = claim_budget(state, queue_sec, ways, floor, last)
        self._budgets[ways] = (state.sample, budget)
        return budget

    def _shaped(
        self, outgoing: list[Outgoing], backlogged: frozenset[str], state: LaneState, ways: int
    ) -> list[Outgoing]:
        """`outgoing` with the backlogged tenants' messages beyond the fast lanes' headroom moved
        to the overflow lane (oldest keep their lane); quiet tenants' messages stay."""
        overflow = self._settings.overflow_lane
        queue_sec = self._settings.fair_queue_sec
        assert queue_sec is not None
        shapeable = [
            i
            for i, o in enumerate(outgoing)
            if o.message.tenant_id in backlogged and o.lane != overflow and o.delay_sec == 0
        ]
        quiet = sum(1 for o in outgoing if o.message.tenant_id not in backlogged)
        room = fast_headroom(
            state,
            queue_sec,
            overflow,
            ways,
            self._settings.claim_max_items or 1,
            quiet,
        )
        shaped = list(outgoing)
        for index in shapeable[room:]:
            shaped[index] = replace(shaped[index], lane=overflow)
        return shaped

    def _bounded(self, read: FairRead, bound: int) -> tuple[list[DueItem], list[DueItem]]:
        """(taken, left) of a bounded claim (docs/FAIRNESS.md): every item of a tenant the read
        saw all of (the read bounds them), and at most `bound` of the backlogged tenants'
        items, shared between them by weight; the rest stays in the due index."""
        quiet = [item for item in read.items if item.tenant_id not in read.backlogged]
        taken, later = fair_take(
            [item for item in read.items if item.tenant_id in read.backlogged],
            bound,
            lambda item: item.tenant_id,
            lambda tenant_id: self._settings.limits_for(tenant_id).weight,
        )
        return sorted([*quiet, *taken], key=lambda item: item.due_key), later

    def _index_next(self, firings: list[_Firing], now: datetime) -> None:
        """Step 3 for a batch of firings: their next occurrences indexed in one request
        (`put_many`: unconditional puts, as each `put` is, at a call per batch rather than per
        item; docs/CAPACITY.md, "The claimer's CPU per item"). A record fault in the batch
        (a job whose next firing cannot be computed, an item DynamoDB refuses, which refuses
        the whole request) has each firing indexed on its own, so only that one is parked."""
        try:
            self._due.put_many([_next_entry(f) for f in firings], now)
        except Exception as exc:
            if not is_record_fault(exc):
                raise
            for firing in firings:
                self._isolated(lambda f: self._index_one(f, now), None, now)(firing)

    def _index_one(self, firing: _Firing, now: datetime) -> None:
        tenant_id, job_id, due = _next_entry(firing)
        self._due.put(tenant_id, job_id, due, now)

    def _advance(self, firing: _Firing, now: datetime, epoch: int | None) -> bool:
        """Step 4 of one item; True when its due item is finished with (step 5 deletes it, or
        passes it with the cursor), False when it must stay for the next claim.

        The advance is fenced on the job's version (`JobStore.advance`). When an edit landed
        since the claim read the job, the job as it now is decides: if it still points at the
        fired occurrence (the edit kept that instant, as a new schedule whose first occurrence
        it is), it is indexed and advanced by its new schedule, so none of the new schedule's
        occurrences is lost; otherwise (paused, deleted, moved) the edit already set where the
        job goes next, and the claim leaves it there. Either way the execution created from
        the old definition stays: the worker checks it against the job before it runs
        (`takt.worker.recheck`).
        """
        job, next_run = firing.job, firing.plan.next_run
        for _ in range(MAX_ADVANCE_TRIES):
            outcome = self._jobs.advance(
                job, firing.nominal, next_run, active_execution=firing.holder, region_epoch=epoch
            )
            current = outcome.current
            if _advanced_later(outcome.region_epoch, epoch):
                raise Fenced(f"job {job.job_id} was advanced at epoch {outcome.region_epoch}")
            if outcome.applied or current is None:
                break  # advanced now, or deleted
            if current.version == job.version:
                # Moved on by a claim of this occurrence: this claim's own earlier try, or
                # another claim running beside it (a tick's claim outliving its tick, a stalled
                # claimer). That claim indexed where it moved the job before moving it, but its
                # item may have been deleted as stale meanwhile by a claim that read the job
                # before it moved, so the job is indexed again where it now points.
                self._reindex(current, next_run, now)
                break
            if current.status != JobStatus.ACTIVE or current.next_run_time != firing.nominal:
                break
            plan = self._plan(current, firing.nominal, now)
            if plan is None:
                # The job still points here: its due item stays, as for any unplannable job.
                return False
            job, next_run = current, plan.next_run
            if next_run is not None:
                self._due.put(job.tenant_id, job.job_id, job.fire_time(next_run), now)
        else:
            # Edited on every try: the job still points here, so its due item must stay for
            # the next tick, or nothing would index it.
            return False
        return True

    def _reindex(self, current: JobRecord, indexed: datetime | None, now: datetime) -> None:
        """Put the due item of the occurrence `current` points at, unless this claim already
        put it (`indexed`, its step 3): only a job another claim moved costs the write."""
        nominal = current.next_run_time
        if current.status == JobStatus.ACTIVE and nominal is not None and nominal != indexed:
            self._due.put(current.tenant_id, current.job_id, current.fire_time(nominal), now)

    @staticmethod
    def _plan(job: JobRecord, due: datetime, now: datetime) -> FiringPlan | None:
        """The firing plan of a job an edit changed during the claim, or None when its stored
        schedule cannot be evaluated: its due item then stays, and the next claim, which plans
        it afresh, parks it in quarantine (`_firings`)."""
        try:
            return plan_firing(job, due, now)
        except ValueError:  # ScheduleError is a ValueError
            logger.exception("due job cannot be planned", job_id=job.job_id)
            return None

    def _isolated(
        self, action: Callable[[_Firing], R], failed: R, now: datetime
    ) -> Callable[[_Firing], R]:
        """`action` on one firing, with a record fault parking that firing's job in quarantine
        (`failed` is then its result) instead of failing the whole claim: the other firings of
        the phase go on, and the parked one takes no later step."""

        def run(firing: _Firing) -> R:
            try:
                return action(firing)
            except Exception as exc:
                if not is_record_fault(exc):
                    raise
                firing.quarantined = True
                # Counted by `_unparked` once the phase is over (its threads share no result).
                self._park_job(firing.item, exc, now, ClaimResult())
                return failed

        return run

    def _park_job(
        self, item: DueItem, error: BaseException, now: datetime, result: ClaimResult
    ) -> None:
        """Quarantine the job of `item` and remove the due item, so no later claim meets it
        (every claim of its partition would fail on it again). Clearing the record marks the
        job unindexed, and the reconciler indexes it again from the job as it then is."""
        if self._quarantine is not None:
            self._quarantine.park(
                table="jobs",
                key={"tenant_id": item.tenant_id, "job_id": item.job_id},
                where="claimer",
                error=error,
                now=now,
                tenant_id=item.tenant_id,
            )
        result.quarantined += 1
        self._delete_stale(item)

    def _park_due_item(self, item: UnreadableDue, now: datetime, result: ClaimResult) -> None:
        """Quarantine a due item that cannot be read (it names no job takt can find) and remove
        it from its partition; the record keeps its key and its text for the operator."""
        key = {"bucket": item.bucket, "due_key": item.due_key}
        if self._quarantine is not None:
            self._quarantine.park(table="due", key=key, where="claimer", error=item.error, now=now)
        result.quarantined += 1
        self._due.delete_raw(key["bucket"], key["due_key"])

    def _create_executions(
        self, firing: _Firing, now: datetime, result: ClaimResult, epoch: int | None
    ) -> list[Outgoing]:
        """Create the firing's executions as the job's policies decide them
        (`takt.occurrences.decide`, from the slot and the calendars as they are now): the
        skipped ones, then the open execution a run replaces stopped, then the runs in order."""
        job, plan = firing.job, firing.plan
        busy = self._slot_busy(job)
        decision = decide(job, plan, busy, self._calendars_of(job) if plan.run else [])
        for skipped in decision.skipped:
            self._create(job, skipped.scheduled, now, skipped.state, skipped.reason, epoch)
            result.skipped += 1
        if decision.replaces is not None:
            self._replace_holder(job, decision.replaces, now)
        outgoing: list[Outgoing] = []
        for occurrence in decision.runs:
            if self._left_to_lease(job, occurrence.state):
                record = ExecutionRecord.for_job(
                    job,
                    execution_id(job.job_id, occurrence.scheduled),
                    occurrence.scheduled,
                    occurrence.state,
                    now,
                    reason=occurrence.reason,
                )
                firing.run_ids.append(record.execution_id)
                outgoing.append(Outgoing.of(record, recorded=False))
                continue
            record = self._create(
                job, occurrence.scheduled, now, occurrence.state, occurrence.reason, epoch
            )
            if occurrence.state == ExecState.SKIPPED:
                result.skipped += 1
            else:
                _note_created(firing, record, outgoing)
        return outgoing

    def _left_to_lease(self, job: JobRecord, state: ExecState) -> bool:
        """Whether the claim leaves this occurrence's record to its worker's lease
        (`record_at_lease`): a run to send of a job whose run depends on nothing the claim
        reads (overlap `allow`, not a workflow). Skipped and queued occurrences, the runs of a
        job that holds an overlap slot (the next claim reads the record) and a workflow's runs
        are written here as before."""
        return (
            self._settings.record_at_lease
            and state == ExecState.PENDING
            and job.tasks is None
            and not overlap_rule(job.overlap).holds_slot
        )

    def _calendars_of(self, job: JobRecord) -> list[Calendar]:
        """The job's calendars that exist. A calendar deleted since the job named it is left out
        (logged): its windows are gone, and the job keeps running."""
        found = []
        for name in job.calendars or []:
            try:
                found.append(self._calendar(job.tenant_id, name))
            except NotFoundError:
                logger.warning("job names a missing calendar", job_id=job.job_id, calendar=name)
        return found

    def _calendar(self, tenant_id: str, name: str) -> Calendar:
        if self._calendars is None:
            raise NotFoundError(name)
        return self._calendars.get(tenant_id, name)

    def _replace_holder(self, job: JobRecord, replacement: Replacement, now: datetime) -> None:
        """Stop the job's open execution before the occurrence replacing it starts (`overlap:
        replace`).

        The one that is running is asked to stop (its worker cancels it at its next heartbeat, or
        the watchdog when its lease expires); one still waiting is cancelled at once and frees
        the slot. A retry of this claim after a crash finds it already stopped. A write that
        loses a race with the worker reads it again, a few times, and then lets it be: the
        newer occurrence runs either way, as `allow` would run it.
        """
        holder_id = job.active_execution
        if holder_id is None or holder_id == execution_id(job.job_id, replacement.scheduled):
            return
        for _ in range(3):
            try:
                holder = self._executions.get(job.tenant_id, holder_id)
            except NotFoundError:
                return
            if holder.state.terminal or holder.cancel_requested:
                return
            try:
                self._lifecycle.cancel(holder, now, reason=replacement.reason)
            except ConflictError:
                continue
            return

    def _create(
        self,
        job: JobRecord,
        scheduled: datetime,
        now: datetime,
        state: ExecState,
        reason: str | None,
        epoch: int | None,
    ) -> ExecutionRecord:
        """Create (or find, after an earlier crashed try) the execution of one occurrence.

        A pending execution to send stays outside the `open` index: the claim's watch item
        (step 0) has the watchdog check it instead. A queued one (it waits for the watchdog or
        its predecessor to start it) and a workflow's run (its backstop) enter the index."""
        record = ExecutionRecord.for_job(
            job, execution_id(job.job_id, scheduled), scheduled, state, now, reason=reason
        )
        watched = state == ExecState.PENDING and job.tasks is None
        check_at = None if watched else self._check_at(scheduled, now)
        if self._executions.create(record, check_at_ms=check_at, region_epoch=epoch):
            logger.debug(
                "execution created",
                job_id=job.job_id,
                execution_id=record.execution_id,
                state=state.value,
            )
            return record
        existing = self._executions.get(job.tenant_id, record.execution_id)
        logger.debug(
            "execution already exists",
            job_id=job.job_id,
            execution_id=record.execution_id,
            state=existing.state.value,
        )
        return existing

    def _slot_busy(self, job: JobRecord) -> bool:
        """Whether the job's previous run still holds its overlap slot (an open execution)."""
        if not overlap_rule(job.overlap).holds_slot or not job.active_execution:
            return False
        try:
            holder = self._executions.get(job.tenant_id, job.active_execution)
        except NotFoundError:
            return False
        return not holder.state.terminal

    def _delete_stale(self, item: DueItem) -> bool:
        return self._due.delete_if_unchanged(item)
