"""Two claims of one partition at once never leave a job pointing at an occurrence nothing
indexes (issue 14's s20 failure: two interval jobs stopped for good after the ticker's outage).

Claim B (`now` 12:01:24.5) fires an 8 s interval job's 12:01:25 and indexes 12:01:33 (its step
3), then stalls before it moves the job there (step 4). Claim A of the same partition runs
meanwhile, 35.5 s later by its clock, as a tick's claim that outlived its tick or a stalled
claimer's would: it reads 12:01:25 (the job's occurrence) and B's 12:01:33, older than the due
grace period by A's clock. Before the fix A deleted 12:01:33 as stale; B then moved the job
there, and the job pointed at an occurrence with no due item: nothing fired it again.

The claims are real `Claimer`s on moto; the interleaving is forced with events. The verdict reads
the tables directly (`HistoryChecker`: a scan of the due index, the executions) and counts the
occurrences on the job's anchor, not with takt's schedule code.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pytest

from takt.clock import ManualClock
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.models.records import JobRecord
from takt.store.due import DueItem, minute_of
from takt.store.jobs import JobStore
from takt.wiring import Services
from tests.support.faults import Crash, crash_on
from tests.support.history import Expect, HistoryChecker
from tests.support.indexer import index_due
from tests.support.jobs import TENANT, job_id_in_shard, make_job, store_job

SHARD = 0
EVERY = timedelta(seconds=8)
WRITTEN = datetime(2026, 3, 2, 12, 1, 0, tzinfo=UTC)
FIRST = WRITTEN + timedelta(seconds=25)  # the job's occurrence both claims fire
B_NOW = FIRST - timedelta(milliseconds=500)
A_NOW = B_NOW + timedelta(seconds=35.5)  # past the 30 s due grace after B's index write
WAIT_SEC = 30.0  # a deadline for the forced interleaving on a loaded machine, never a pause


def _job(svc: Services, clock: ManualClock) -> JobRecord:
    clock.set(WRITTEN)
    job = make_job(
        now=WRITTEN,
        next_run_time=FIRST,
        interval="8s",
        anchor=FIRST,
        catchup="all",
        catchup_window="1h",
        job_id=job_id_in_shard(TENANT, SHARD, svc.due.shards),
    )
    svc.due.advance_watermark(minute_of(WRITTEN) - timedelta(minutes=1))
    return store_job(svc, job, WRITTEN)


def _claimer(svc: Services, jobs: JobStore) -> Claimer:
    return Claimer(ClaimerSettings.of(svc.settings), jobs, svc.due, svc.executions, svc.lanes)


def _on_advance(jobs: JobStore, first: Callable[[], None]) -> JobStore:
    """A copy of `jobs` that runs `first` before its first `advance`."""
    clone = copy.copy(jobs)
    done = threading.Event()

    def advance(*args: Any, **kwargs: Any) -> Any:
        if not done.is_set():
            done.set()
            first()
        return jobs.advance(*args, **kwargs)

    clone.advance = advance  # type: ignore[method-assign]
    return clone


class StalledClaim:
    """Claim B in a thread of its own, stopped right before its advance until `resume`."""

    def __init__(self, svc: Services) -> None:
        self.reached = threading.Event()
        self._go = threading.Event()
        self.errors: list[BaseException] = []

        def hold() -> None:
            self.reached.set()
            assert self._go.wait(WAIT_SEC)

        claimer = _claimer(svc, _on_advance(svc.jobs, hold))
        self._thread = threading.Thread(target=self._run, args=(claimer,), daemon=True)

    def _run(self, claimer: Claimer) -> None:
        try:
            claimer.claim(minute_of(FIRST), SHARD, B_NOW)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread, which asserts on it
            self.errors.append(exc)

    def start(self) -> None:
        self._thread.start()
        assert self.reached.wait(WAIT_SEC)

    def release(self) -> None:
        """Let B go on, if a failed test left it waiting."""
        self._go.set()

    def resume(self) -> None:
        """Let B advance the job and finish, and wait until it has."""
        self._go.set()
        self._thread.join(WAIT_SEC)
        assert not self._thread.is_alive()
        assert self.errors == []


@pytest.fixture
def stalled(svc: Services) -> Iterator[StalledClaim]:
    claim = StalledClaim(svc)
    yield claim
    claim.release()


def _indexed(checker: HistoryChecker, job: JobRecord, svc: Services) -> bool:
    """Whether the due index holds an item where the job now points (read from the tables)."""
    now = svc.jobs.get(TENANT, job.job_id).next_run_time
    return any(d.job_id == job.job_id and d.due == now for d in checker.due_items())


def _run_ticks(svc: Services, clock: ManualClock, start: datetime, seconds: int) -> datetime:
    """Healthy ticks, one a second; returns the last claim's reach (its horizon)."""
    for second in range(seconds):
        clock.set(start + timedelta(seconds=second))
        svc.ticker.tick(clock.now())
    return clock.now() + timedelta(seconds=svc.settings.dispatch_ahead_sec)


def _every_occurrence_once(checker: HistoryChecker, job: JobRecord, horizon: datetime) -> None:
    """Each 8 s occurrence from the first through `horizon` has exactly one execution, and the
    job waits at the next one with its due item (counted on the anchor, not by takt)."""
    count = (horizon - FIRST) // EVERY + 1
    run = [FIRST + EVERY * k for k in range(count)]
    report = checker.check([Expect(job.job_id, run, FIRST + EVERY * count)])
    assert report.problems() == []


def test_a_claim_does_not_delete_the_next_due_item_of_an_advance_in_flight(
    svc: Services, clock: ManualClock, checker: HistoryChecker, stalled: StalledClaim
) -> None:
    job = _job(svc, clock)
    stalled.start()
    claim_a = _claimer(svc, _on_advance(svc.jobs, stalled.resume))

    claim_a.claim(minute_of(FIRST), SHARD, A_NOW)

    # B moved the job to 12:01:33 before A's advance, which found it moved on.
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == FIRST + EVERY
    assert _indexed(checker, job, svc)
    horizon = _run_ticks(svc, clock, A_NOW + timedelta(seconds=1), 40)
    _every_occurrence_once(checker, job, horizon)


def test_a_claim_that_dies_after_reading_an_advance_in_flight_leaves_the_job_indexed(
    svc: Services, clock: ManualClock, checker: HistoryChecker, stalled: StalledClaim
) -> None:
    """A dies before its own advance, so nothing of A's conflict path can repair the job: only
    leaving B's item alone keeps it indexed."""
    job = _job(svc, clock)
    stalled.start()
    claim_a = _claimer(svc, crash_on(_on_advance(svc.jobs, stalled.resume), "advance"))

    with pytest.raises(Crash):
        claim_a.claim(minute_of(FIRST), SHARD, A_NOW)

    assert svc.jobs.get(TENANT, job.job_id).next_run_time == FIRST + EVERY
    assert _indexed(checker, job, svc)
    horizon = _run_ticks(svc, clock, A_NOW + timedelta(seconds=1), 40)
    _every_occurrence_once(checker, job, horizon)


def test_a_claim_whose_advance_finds_the_job_moved_on_indexes_it_where_it_points(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    """Another claim (a later one, past an outage) moved the job on to 12:01:41 while this one
    ran, and no due item is there (whatever removed it): this claim, whose own plan indexed
    12:01:33, puts it there when its advance finds the job moved."""
    job = _job(svc, clock)
    elsewhere = FIRST + 2 * EVERY

    def moved_by_another_claim() -> None:
        assert svc.jobs.advance(job, FIRST, elsewhere).applied

    claimer = _claimer(svc, _on_advance(svc.jobs, moved_by_another_claim))
    claimer.claim(minute_of(FIRST), SHARD, B_NOW)

    assert svc.jobs.get(TENANT, job.job_id).next_run_time == elsewhere
    assert _indexed(checker, job, svc)


def test_a_job_left_pointing_where_nothing_is_indexed_is_repaired_by_the_reconciler(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    """The safety net, whatever left the job so: its 12:01:25 item is gone and a half-done
    advance's 12:01:33 is there. A claim that meets 12:01:33 past the due grace period marks the
    job; the indexer, which sees that write on the stream, leaves the marker (no edit set it);
    the reconciler, past its own grace, indexes the job where it points, and every occurrence
    runs once, late."""
    job = _job(svc, clock)
    items = svc.clients.dynamodb.scan(TableName=svc.settings.due_table, ConsistentRead=True)
    [first] = [
        DueItem.from_item(item)
        for item in items["Items"]
        if item["due_key"]["S"].endswith(f"#{TENANT}#{job.job_id}")
    ]
    assert svc.due.delete_if_unchanged(first)
    svc.due.put(TENANT, job.job_id, FIRST + EVERY, WRITTEN)

    swept = A_NOW + timedelta(seconds=svc.settings.reindex_grace_sec)
    early = svc.reconciler.run(A_NOW)
    svc.ticker.tick(A_NOW)
    index_due(svc)
    repair = svc.reconciler.run(swept)

    assert (early.found, repair.found, repair.repaired) == (0, 1, 1)
    assert _indexed(checker, job, svc)
    horizon = _run_ticks(svc, clock, swept, 10)
    _every_occurrence_once(checker, job, horizon)


REPLAN_CRASHES = [
    # The re-plan's put is the claim's first `put` (its step 3 indexed with `put_many`).
    pytest.param("due", "put", 1, "before", id="before-the-re-plans-put"),
    pytest.param("due", "put", 1, "after", id="after-the-re-plans-put"),
    pytest.param("jobs", "advance", 2, "before", id="before-the-second-advance"),
    pytest.param("jobs", "advance", 2, "after", id="after-the-second-advance"),
    pytest.param("due", "delete_if_unchanged", 1, "before", id="before-the-fired-items-delete"),
]


@pytest.mark.parametrize(("part", "method", "call", "when"), REPLAN_CRASHES)
def test_a_claim_that_dies_in_its_re_plan_after_an_edit_leaves_the_job_indexed(
    svc: Services,
    clock: ManualClock,
    checker: HistoryChecker,
    part: str,
    method: str,
    call: int,
    when: Literal["before", "after"],
) -> None:
    """The version-fenced advance's other path (issue 14's second hypothesis): an edit (every
    8 s made every 5 s, the same first occurrence) lands between the claim's read and its
    advance, so the claim re-plans from the job as it now is, indexes the new schedule's next
    occurrence and advances again; it dies at each of those writes. The next ticks find the job
    where it points, with its due item, and run every occurrence of the new schedule once."""
    job = _job(svc, clock)
    every = timedelta(seconds=5)

    def edit() -> None:
        edited = job.model_copy(update={"interval": "5s", "version": job.version + 1})
        svc.jobs.update_definition(edited, job.version, {"interval"})

    jobs = _on_advance(svc.jobs, edit)
    due = svc.due
    if part == "jobs":
        jobs = crash_on(jobs, method, call=call, when=when)
    else:
        due = crash_on(due, method, call=call, when=when)
    claimer = Claimer(ClaimerSettings.of(svc.settings), jobs, due, svc.executions, svc.lanes)

    with pytest.raises(Crash):
        claimer.claim(minute_of(FIRST), SHARD, B_NOW)

    assert svc.jobs.get(TENANT, job.job_id).interval == "5s"
    assert _indexed(checker, job, svc)
    horizon = _run_ticks(svc, clock, B_NOW + timedelta(seconds=1), 20)
    count = (horizon - FIRST) // every + 1
    run = [FIRST + every * k for k in range(count)]
    report = checker.check([Expect(job.job_id, run, FIRST + every * count)])
    assert report.problems() == []
