"""The claim cursor (`Settings.due_cursor`, the seed and tenx profiles; issue 26: one write unit
of every execution): a claim passes the due items it finished with one conditional write of its
partition's cursor instead of a delete each, and every read of the partition starts after it.

Real `Claimer` and `DueStore` on moto. The verdicts read the raw due table (a scan: which items
are stored, where the cursor item says it is) and count the DynamoDB calls on the wire, not
takt's own counters; `HistoryChecker` judges the runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from takt.clock import ManualClock
from takt.config import Settings
from takt.dispatch.claimer import Claimer, ClaimerSettings, ClaimResult
from takt.models.records import JobRecord
from takt.store.due import minute_of, shard_of
from takt.wiring import Services
from tests.support.faults import Crash, crash_on
from tests.support.history import Expect, HistoryChecker
from tests.support.jobs import TENANT, job_id_in_shard, jobs_due_in_shard, make_job, store_job
from tests.support.lanes import drain

SHARD = 0
DUE = datetime(2026, 3, 2, 12, 0, 5, tzinfo=UTC)
MINUTE = minute_of(DUE)
# The late margin these tests run with: 10 s (burst claims off, so a claim reaches 1 s ahead);
# `jobs_due_in_shard` writes its items a minute ahead, well outside it.
CURSOR = {"due_cursor": True, "due_late_margin_sec": 10.0, "burst_ahead_sec": 0.0}


@pytest.fixture
def svc(make_svc: Callable[..., Services], clock: ManualClock) -> Services:
    clock.set(DUE)
    return make_svc(**CURSOR)


@pytest.fixture
def calls(svc: Services) -> Iterator[Counter[str]]:
    """The DynamoDB operations the stores send from here on, by name."""
    seen: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        seen[model.name] += 1

    events = svc.clients.dynamodb.meta.events
    events.register("before-call.dynamodb.*", count)
    yield seen
    events.unregister("before-call.dynamodb.*", count)


def _partition_items(svc: Services, minute: datetime = MINUTE) -> dict[str, dict[str, Any]]:
    """Every item of the claimed partition as the table holds it, by key."""
    resp = svc.clients.dynamodb.query(
        TableName=svc.settings.due_table,
        KeyConditionExpression="#b = :b",
        ExpressionAttributeNames={"#b": "bucket"},
        ExpressionAttributeValues={":b": {"S": f"{minute:%Y%m%d%H%M}#{SHARD:03d}"}},
        ConsistentRead=True,
    )
    return {item["due_key"]["S"]: item for item in resp["Items"]}


def _claim(svc: Services, now: datetime = DUE, **settings: Any) -> ClaimResult:
    claimer_settings = ClaimerSettings.of(svc.settings.model_copy(update=settings))
    claimer = Claimer(claimer_settings, svc.jobs, svc.due, svc.executions, svc.lanes)
    return claimer.claim(MINUTE, SHARD, now)


def _interval_jobs(svc: Services, count: int) -> list[JobRecord]:
    return jobs_due_in_shard(svc, count, DUE, SHARD, interval="1h", anchor=DUE)


def _key(job: JobRecord, due: datetime = DUE) -> str:
    return f"{int(due.timestamp() * 1000):013d}#{TENANT}#{job.job_id}"


def test_a_claim_passes_the_items_it_fired_with_one_write_and_deletes_none(
    svc: Services, calls: Counter[str]
) -> None:
    jobs = _interval_jobs(svc, 5)
    calls.clear()

    result = _claim(svc)

    assert result.dispatched == 5
    assert len(drain(svc)) == 5
    assert calls["DeleteItem"] == 0
    stored = _partition_items(svc)
    last = max(_key(job) for job in jobs)
    assert stored["~"]["at"]["S"] == last  # the cursor, past the last item fired
    # The fired items stay, each with its expiry (its minute plus the history's retention), and
    # so does the cursor item, with the same: time to live removes the whole partition.
    keep = {"N": str(int(MINUTE.timestamp()) + int(svc.settings.history_retention_days * 86400))}
    for job in jobs:
        assert stored[_key(job)].get("expires_at") == keep
    assert stored["~"].get("expires_at") == keep, "a cursor item without an expiry stays forever"
    assert all(
        svc.jobs.get(TENANT, j.job_id).next_run_time == DUE + timedelta(hours=1) for j in jobs
    )


def test_a_later_claim_reads_past_the_cursor_and_fires_nothing_twice(
    svc: Services, calls: Counter[str], clock: ManualClock
) -> None:
    _interval_jobs(svc, 5)
    _claim(svc)
    drain(svc)
    calls.clear()

    again = _claim(svc, DUE + timedelta(seconds=1))

    assert (again.due, again.dispatched, again.stale) == (0, 0, 0)
    assert drain(svc) == []
    assert calls["BatchGetItem"] == 0  # no job read for an item the cursor passed
    later = DUE + timedelta(seconds=1)
    assert svc.due.read_due(MINUTE, SHARD, later).items == []
    assert svc.due.read_fair(MINUTE, SHARD, later, 50, 4).items == []
    assert not svc.due.has_due(MINUTE, SHARD, DUE + timedelta(seconds=1))
    assert svc.due.bucket_empty(MINUTE, SHARD)
    # What the index still has to claim: each job's next item, not one the cursor passed.
    remaining = HistoryChecker(svc).due_items()
    assert sorted(item.due for item in remaining) == [DUE + timedelta(hours=1)] * 5


def test_an_item_due_within_the_margin_is_a_late_item_claimed_and_deleted(
    svc: Services, calls: Counter[str]
) -> None:
    svc.due.advance_watermark(MINUTE - timedelta(minutes=1))
    written = DUE - timedelta(seconds=5)  # inside the 10 s margin
    job = store_job(
        svc,
        make_job(
            now=written, next_run_time=DUE, job_id=job_id_in_shard(TENANT, SHARD, svc.due.shards)
        ),
        written,
    )
    assert shard_of(TENANT, job.job_id, svc.due.shards) == SHARD
    assert set(_partition_items(svc)) == {"~" + _key(job)}
    assert svc.due.has_due(MINUTE, SHARD, DUE)
    calls.clear()

    result = _claim(svc)

    assert result.dispatched == 1
    assert calls["DeleteItem"] == 1
    assert _partition_items(svc) == {}  # deleted, and no cursor written for it
    assert svc.due.bucket_empty(MINUTE, SHARD)


def test_the_cursor_stops_at_an_item_the_claim_left_and_what_it_fired_past_it_is_deleted(
    svc: Services, calls: Counter[str]
) -> None:
    early = jobs_due_in_shard(
        svc, 2, DUE - timedelta(seconds=2), SHARD, interval="1h", anchor=DUE - timedelta(seconds=2)
    )
    # An item no job points at, written 20 s ago: young (inside the due grace), so it is left.
    orphan = job_id_in_shard(TENANT, SHARD, svc.due.shards)
    svc.due.put(TENANT, orphan, DUE - timedelta(seconds=1), DUE - timedelta(seconds=20))
    later = _interval_jobs(svc, 3)
    calls.clear()

    result = _claim(svc)

    assert (result.dispatched, result.left) == (5, 1)
    stored = _partition_items(svc)
    passed = max(_key(job, DUE - timedelta(seconds=2)) for job in early)
    assert stored["~"]["at"]["S"] == passed
    assert calls["DeleteItem"] == 3  # the fired items past the left one
    assert all(_key(job) not in stored for job in later)
    assert all(_key(job, DUE - timedelta(seconds=2)) in stored for job in early)
    assert (
        f"{int((DUE - timedelta(seconds=1)).timestamp() * 1000):013d}#{TENANT}#{orphan}" in stored
    )
    assert svc.due.has_due(MINUTE, SHARD, DUE)  # the left item is still to claim


@pytest.mark.parametrize("before", ["no-cursor-yet", "a-cursor"])
def test_a_claim_that_finds_the_cursor_moved_meanwhile_deletes_every_item_it_finished(
    svc: Services, before: str
) -> None:
    if before == "a-cursor":
        jobs_due_in_shard(svc, 2, DUE - timedelta(seconds=2), SHARD)
        _claim(svc, DUE - timedelta(seconds=2))
        drain(svc)
    _interval_jobs(svc, 3)
    read = svc.due.read_due(MINUTE, SHARD, DUE)
    _claim(svc)  # another claim of the partition passes them first
    moved = _partition_items(svc)["~"]["at"]["S"]

    left = svc.due.settle(read, read.items)

    assert len(read.items) == 3
    assert left == read.items
    assert _partition_items(svc)["~"]["at"]["S"] == moved


def test_a_fair_read_lets_the_cursor_pass_only_what_it_read_whole(svc: Services) -> None:
    svc.due.advance_watermark(MINUTE - timedelta(minutes=1))
    written = DUE - timedelta(minutes=1)
    flood = [job_id_in_shard("flood", SHARD, svc.due.shards) for _ in range(60)]
    for job_id in flood:
        svc.due.put("flood", job_id, DUE - timedelta(seconds=1), written)
    quiet = job_id_in_shard(TENANT, SHARD, svc.due.shards)
    svc.due.put(TENANT, quiet, DUE, written)

    read = svc.due.read_fair(MINUTE, SHARD, DUE, 50, 4)
    keys = sorted(item.due_key for item in read.items)
    flood_keys = sorted(
        f"{int((DUE - timedelta(seconds=1)).timestamp() * 1000):013d}#flood#{j}" for j in flood
    )

    assert read.whole_through == flood_keys[49]  # the first page, read whole; then a jump
    left = svc.due.settle(read, read.items)
    assert _partition_items(svc)["~"]["at"]["S"] == flood_keys[49]
    assert sorted(item.due_key for item in left) == [k for k in keys if k > flood_keys[49]]


def test_a_claim_that_dies_before_it_moves_the_cursor_is_finished_by_a_later_one(
    svc: Services, clock: ManualClock
) -> None:
    jobs = _interval_jobs(svc, 3)
    dying = Claimer(
        ClaimerSettings.of(svc.settings),
        svc.jobs,
        crash_on(svc.due, "settle", call=1, when="before"),
        svc.executions,
        svc.lanes,
    )
    with pytest.raises(Crash):
        dying.claim(MINUTE, SHARD, DUE)
    assert "~" not in _partition_items(svc)

    clock.set(DUE + timedelta(seconds=1))
    again = _claim(svc, clock.now())

    # The fired items are read again: their jobs moved past them, so each is deleted as stale.
    assert (again.dispatched, again.stale) == (0, 3)
    report = HistoryChecker(svc).check(
        [Expect(job.job_id, [DUE], DUE + timedelta(hours=1)) for job in jobs]
    )
    assert report.problems() == []
    assert report.stale_due == []


def test_the_ticker_claims_through_the_cursor_and_moves_the_watermark_past_a_claimed_minute(
    svc: Services, clock: ManualClock
) -> None:
    jobs = _interval_jobs(svc, 4)
    for second in range(3):
        clock.set(DUE + timedelta(seconds=second))
        svc.ticker.tick(clock.now())
    assert "~" in _partition_items(svc)

    for second in (1, 2):  # a tick moves the watermark a minute: the one before, then this
        clock.set(MINUTE + timedelta(minutes=3, seconds=second))
        svc.ticker.tick(clock.now())

    watermark = svc.due.watermark()
    assert watermark is not None and watermark > MINUTE
    report = HistoryChecker(svc).check(
        [Expect(job.job_id, [DUE], DUE + timedelta(hours=1)) for job in jobs]
    )
    assert report.problems() == []
    assert len(report.messages) == 4


def test_a_late_margin_inside_a_claims_reach_is_refused(moto_endpoint: str) -> None:
    with pytest.raises(ValidationError, match="due_late_margin_sec"):
        Settings(due_cursor=True, due_late_margin_sec=30.0, burst_ahead_sec=30.0)


@pytest.mark.parametrize(("cursor", "deletes"), [(False, 2), (True, 1)], ids=["deletes", "cursor"])
def test_a_claim_deletes_a_stale_item_once_and_its_fired_item_at_most_once(
    make_svc: Callable[..., Services], clock: ManualClock, cursor: bool, deletes: int
) -> None:
    clock.set(DUE)
    svc = make_svc(**{**CURSOR, "due_cursor": cursor})
    (job,) = _interval_jobs(svc, 1)
    # An item of the job's from before an edit moved it (written a minute ago: stale and old).
    svc.due.put(TENANT, job.job_id, DUE - timedelta(seconds=1), DUE - timedelta(minutes=1))
    seen: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        seen[model.name] += 1

    svc.clients.dynamodb.meta.events.register("before-call.dynamodb.DeleteItem", count)
    result = _claim(svc)

    assert (result.dispatched, result.stale) == (1, 1)
    # The stale item's delete, and the fired item's unless the cursor passes it: no item twice.
    assert seen["DeleteItem"] == deletes


class _EditedBeforeEachAdvance:
    """The jobs store, with an edit that keeps the job at its occurrence (its payload changed,
    its version moved on) landing just before each advance: every try is refused."""

    def __init__(self, svc: Services) -> None:
        self._svc = svc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._svc.jobs, name)

    def advance(self, job: JobRecord, *args: Any, **kwargs: Any) -> Any:
        current = self._svc.jobs.get(job.tenant_id, job.job_id)
        edited = current.model_copy(
            update={"payload": {"edit": current.version}, "version": current.version + 1}
        )
        self._svc.jobs.update_definition(edited, current.version, {"payload"})
        return self._svc.jobs.advance(job, *args, **kwargs)


@pytest.mark.parametrize("cursor", [False, True], ids=["deletes", "cursor"])
def test_an_item_whose_advance_was_refused_on_every_try_stays_to_claim(
    make_svc: Callable[..., Services], clock: ManualClock, cursor: bool
) -> None:
    clock.set(DUE)
    svc = make_svc(**{**CURSOR, "due_cursor": cursor})
    (job,) = _interval_jobs(svc, 1)
    claimer = Claimer(
        ClaimerSettings.of(svc.settings),
        _EditedBeforeEachAdvance(svc),
        svc.due,
        svc.executions,
        svc.lanes,
    )

    claimer.claim(MINUTE, SHARD, DUE)

    # The job still points at the occurrence, so its item must still be there to claim: not
    # deleted, and not behind the cursor (beside the next occurrence's, which step 3 put).
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == DUE
    remaining = sorted(item.due for item in HistoryChecker(svc).due_items())
    assert remaining == [DUE, DUE + timedelta(hours=1)]
    assert svc.due.has_due(MINUTE, SHARD, DUE)
