"""The claimer's decisions over in-memory tables (tests/support/fakes): each test claims a
partition through the claimer's public entry (`Claimer.claim`) and checks what the tables and
the lanes hold after it, naming the DESIGN invariant it defends. The same claims run on moto's
real expressions in tests/integration (test_dispatch_*) and under faults in tests/chaos.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from takt.clock import ManualClock
from takt.config import Settings
from takt.dispatch.claimer import Claimer, ClaimerSettings, ClaimResult
from takt.models.calls import CallContext, TargetResult
from takt.models.ids import execution_id
from takt.models.records import ExecState, ExecutionRecord, JobRecord, JobStatus
from takt.store.due import minute_of
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.support.fakes import (
    FakeCalendars,
    FakeDue,
    FakeExecutions,
    FakeJobs,
    FakeLanes,
    FakeQuarantine,
)
from tests.support.jobs import TENANT, make_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
CREATED = NOON - timedelta(hours=1)


class World:
    """One partition's tables and lanes, and claimers over them (one thread per claim, so a
    test decides where another actor's write lands)."""

    def __init__(self, **settings: Any) -> None:
        # Unbounded claims unless a test bounds them (docs/FAIRNESS.md).
        settings.setdefault("claim_max_items", None)
        self.settings = Settings(claimer_threads=1, due_shards=1, **settings)
        self.jobs = FakeJobs()
        self.due = FakeDue(shards=1)
        self.executions = FakeExecutions()
        self.lanes = FakeLanes()
        self.calendars = FakeCalendars()
        self.quarantine = FakeQuarantine()
        # The claimer's own clock, which times a claim: it stands still unless a test moves it.
        self.elapsed = 0.0
        self.claimer = self.new_claimer()

    def new_claimer(self) -> Claimer:
        return Claimer(
            ClaimerSettings.of(self.settings),
            self.jobs,
            self.due,
            self.executions,
            self.lanes,
            self.calendars,
            None,
            self.quarantine,
            monotonic=lambda: self.elapsed,
        )

    def job(self, at: datetime = NOON, **fields: Any) -> JobRecord:
        """An every-minute job due at `at`, indexed and stored as the API leaves it."""
        fields.setdefault("schedule", "* * * * *")
        job = make_job(now=CREATED, next_run_time=at, **fields)
        self.due.put(job.tenant_id, job.job_id, at, CREATED)
        return self.jobs.put(job)

    def claim(self, now: datetime = NOON, claimer: Claimer | None = None) -> ClaimResult:
        return (claimer or self.claimer).claim(minute_of(NOON), 0, now)

    def states(self) -> list[tuple[str, ExecState, str | None]]:
        return [(e.execution_id, e.state, e.reason) for e in self.executions.all()]


@pytest.fixture
def world() -> World:
    return World()


def test_a_claim_creates_one_execution_under_the_occurrences_id_and_a_second_claim_adds_none(
    world: World,
) -> None:
    job = world.job()

    first = world.claim(NOON + timedelta(milliseconds=200))
    second = world.claim(NOON + timedelta(seconds=1))

    occurrence = f"{job.job_id}.20260302T120000000Z"
    assert occurrence == execution_id(job.job_id, NOON), "the id is (job, scheduled instant)"
    assert world.states() == [(occurrence, ExecState.PENDING, None)], (
        "invariant 3: one execution per (job, scheduled time), however often the bucket is claimed"
    )
    assert world.lanes.attempts() == [(occurrence, 1)]
    assert (first.dispatched, second.dispatched) == (1, 0)
    assert world.jobs.get(TENANT, job.job_id).next_run_time == NOON + MINUTE
    assert world.due.indexed(TENANT, job.job_id) == [NOON + MINUTE], (
        "invariant 2: the job is indexed at its next occurrence and the fired item is gone"
    )


def test_two_claimers_racing_one_partition_make_one_execution_and_advance_the_job_once(
    world: World,
) -> None:
    job = world.job()
    rival = world.new_claimer()

    def rival_claims_first(record: ExecutionRecord) -> None:
        world.executions.before_create = None
        world.claim(claimer=rival)

    world.executions.before_create = rival_claims_first
    world.claim()

    occurrence = execution_id(job.job_id, NOON)
    assert world.states() == [(occurrence, ExecState.PENDING, None)], (
        "invariant 3: the loser's create meets attribute_not_exists and finds the winner's"
    )
    assert set(world.lanes.attempts()) == {(occurrence, 1)}, (
        "a second message is only a duplicate of the same attempt, which the lease absorbs"
    )
    assert world.jobs.advances == 1
    assert world.jobs.get(TENANT, job.job_id).next_run_time == NOON + MINUTE
    assert world.due.indexed(TENANT, job.job_id) == [NOON + MINUTE]


def test_a_claim_that_died_before_its_advance_is_redone_by_the_next_without_a_second_execution(
    world: World,
) -> None:
    job = world.job()

    def crash(_: JobRecord) -> None:
        world.jobs.before_advance = None
        raise RuntimeError("the claimer died before step 4")

    world.jobs.before_advance = crash
    with pytest.raises(RuntimeError):
        world.claim()
    world.claim(NOON + timedelta(seconds=1))

    occurrence = execution_id(job.job_id, NOON)
    assert world.states() == [(occurrence, ExecState.PENDING, None)], (
        "invariant 2: the retry finds the crashed claim's execution and does not make another"
    )
    assert set(world.lanes.attempts()) == {(occurrence, 1)}
    assert world.jobs.advances == 1
    assert world.jobs.get(TENANT, job.job_id).next_run_time == NOON + MINUTE
    assert world.due.indexed(TENANT, job.job_id) == [NOON + MINUTE], (
        "invariant 1: the redone claim leaves the job indexed at its next occurrence"
    )


def test_a_job_paused_before_its_due_time_gets_no_execution_and_its_due_item_goes(
    world: World,
) -> None:
    job = world.job()
    world.jobs.edit(TENANT, job.job_id, status=JobStatus.PAUSED)

    result = world.claim()

    assert world.states() == [], "invariant 8: a pause acknowledged before noon decides noon"
    assert world.lanes.sent == []
    assert (result.stale, world.due.indexed(TENANT, job.job_id)) == (1, [])
    paused = world.jobs.get(TENANT, job.job_id)
    assert (paused.status, paused.next_run_time, paused.version) == (JobStatus.PAUSED, NOON, 2)


def test_an_edit_landing_during_a_claim_decides_where_the_job_goes_next(world: World) -> None:
    job = world.job()

    def reschedule(_: JobRecord) -> None:
        world.jobs.before_advance = None
        world.jobs.edit(TENANT, job.job_id, schedule="*/5 * * * *", next_run_time=NOON + 5 * MINUTE)

    world.jobs.before_advance = reschedule
    world.claim()

    edited = world.jobs.get(TENANT, job.job_id)
    assert (edited.next_run_time, edited.version) == (NOON + 5 * MINUTE, 2), (
        "invariant 8: the advance is fenced on the version, so the claim leaves the job where "
        "the edit put it rather than at the old schedule's next minute"
    )
    assert world.jobs.advances == 0


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (
            {"status": JobStatus.PAUSED},
            "the job was paused before its occurrence of 2026-03-02T12:00:00Z ran",
        ),
        (
            {"schedule": "30 * * * *", "next_run_time": NOON + 30 * MINUTE},
            "the job was edited (version 1 to 2) and no longer fires at 2026-03-02T12:00:00Z",
        ),
    ],
    ids=["paused", "rescheduled"],
)
def test_an_occurrence_claimed_ahead_and_then_edited_is_recorded_skipped_by_its_worker(
    edit: dict[str, Any], reason: str
) -> None:
    world = World(dispatch_ahead_sec=2.0)
    job = world.job()
    world.claim(NOON - timedelta(seconds=1))
    world.jobs.edit(TENANT, job.job_id, **edit)
    clock = ManualClock(NOON)
    calls: list[str] = []

    class Targets:
        def serves(self, handler: str) -> bool:
            return True

        def call(self, target: str, ctx: CallContext) -> TargetResult:
            calls.append(ctx.execution_id)
            return TargetResult("success")

    runner = ExecutionRunner(
        RunnerSettings.of(world.settings),
        world.jobs,
        world.executions,
        world.lanes,
        Targets(),
        clock,
        worker_id="w1",
        monotonic=clock.monotonic,
    )

    outcome = runner.process(world.lanes.sent[0].message)

    skipped = world.executions.get(TENANT, execution_id(job.job_id, NOON))
    assert (outcome.state, skipped.state, skipped.reason) == ("skipped", ExecState.SKIPPED, reason)
    assert calls == [], "invariant 8: an edit acknowledged before the due time decides the run"


def test_occurrences_missed_while_nothing_claimed_are_recorded_skipped_and_the_latest_runs(
    world: World,
) -> None:
    job = world.job()

    world.claim(NOON + 3 * MINUTE)

    ids = [execution_id(job.job_id, NOON + i * MINUTE) for i in range(4)]
    assert world.states() == [
        (ids[0], ExecState.SKIPPED, "catchup=once"),
        (ids[1], ExecState.SKIPPED, "catchup=once"),
        (ids[2], ExecState.SKIPPED, "catchup=once"),
        (ids[3], ExecState.PENDING, None),
    ], "invariant 1: every passed occurrence gets an execution or a recorded skip"
    assert world.lanes.attempts() == [(ids[3], 1)]
    assert world.jobs.get(TENANT, job.job_id).next_run_time == NOON + 4 * MINUTE


def test_an_occurrence_whose_previous_run_is_still_open_is_recorded_skipped_under_overlap_skip(
    world: World,
) -> None:
    job = world.job(overlap="skip")
    world.claim()
    world.due.put(TENANT, job.job_id, NOON + MINUTE, NOON)

    world.claimer.claim(minute_of(NOON + MINUTE), 0, NOON + MINUTE)

    first, second = (execution_id(job.job_id, NOON + i * MINUTE) for i in range(2))
    assert world.states() == [
        (first, ExecState.PENDING, None),
        (second, ExecState.SKIPPED, "overlap=skip"),
    ], "the job's open run holds its slot, so its next occurrence is recorded skipped"
    assert world.lanes.attempts() == [(first, 1)]


def test_a_job_that_cannot_be_read_is_parked_and_the_rest_of_the_claim_goes_on(
    world: World,
) -> None:
    good = world.job()
    bad = world.job()
    world.jobs.items[(TENANT, bad.job_id)]["next_run_time"] = {"S": "not a time"}

    result = world.claim()

    assert world.states() == [(execution_id(good.job_id, NOON), ExecState.PENDING, None)], (
        "invariant 9: a job that cannot be read does not stop the others of its partition"
    )
    assert result.quarantined == 1
    assert [(p.table, p.key, p.where) for p in world.quarantine.parked] == [
        ("jobs", {"tenant_id": TENANT, "job_id": bad.job_id}, "claimer")
    ]
    assert world.due.indexed(TENANT, bad.job_id) == [], "no later claim meets it again"


def test_a_job_whose_execution_the_table_refuses_is_parked_and_the_rest_of_the_claim_goes_on(
    world: World,
) -> None:
    good = world.job()
    bad = world.job()
    refused = execution_id(bad.job_id, NOON)

    def refuse_the_bad_one(record: ExecutionRecord) -> None:
        if record.execution_id == refused:
            raise ClientError(
                {"Error": {"Code": "ValidationException", "Message": "item too large"}},
                "PutItem",
            )

    world.executions.before_create = refuse_the_bad_one

    try:
        result = world.claim()
    except Exception as exc:  # noqa: BLE001 - any error out of the claim is the rule broken
        pytest.fail(f"no record stops others (invariant 9): a bad record ended the claim: {exc!r}")

    assert world.states() == [(execution_id(good.job_id, NOON), ExecState.PENDING, None)]
    assert world.lanes.attempts() == [(execution_id(good.job_id, NOON), 1)], (
        "invariant 9: a write DynamoDB refuses for one job does not stop the others"
    )
    assert result.quarantined == 1
    assert [p.key["job_id"] for p in world.quarantine.parked] == [bad.job_id]
    assert world.due.indexed(TENANT, bad.job_id) == [], "no later claim meets it again"


def test_a_claim_lists_its_executions_for_the_watchdog_before_it_creates_them(
    world: World,
) -> None:
    job = world.job()
    listed_at_create: list[list[str]] = []
    world.executions.before_create = lambda _: listed_at_create.append(world.due.watches.listed())

    world.claim()

    assert listed_at_create == [[execution_id(job.job_id, NOON)]], (
        "invariant 1: an execution created outside the open index is already on a watch "
        "list, so a claim dying after the create leaves nothing unchecked"
    )


def test_a_due_item_ahead_of_its_job_is_kept_and_an_old_one_has_the_job_checked(
    world: World,
) -> None:
    job = world.job(at=NOON + timedelta(seconds=45), schedule=None)
    # Another claim's step 3 (its next due item), whose step 4 (the advance) never came.
    world.due.items.clear()
    world.due.put(TENANT, job.job_id, NOON + timedelta(seconds=50), NOON - MINUTE)

    result = world.claim(NOON + timedelta(seconds=55))

    assert world.due.indexed(TENANT, job.job_id) == [NOON + timedelta(seconds=50)], (
        "invariant 1: an item after its job's occurrence may be an advance in flight, not stale"
    )
    assert result.left == 1
    assert world.jobs.attr(TENANT, job.job_id, "unindexed") is not None, (
        "past the grace period the reconciler is asked to check where the job points"
    )


def test_the_minutes_first_second_is_claimed_ahead_and_sent_delayed_to_its_second() -> None:
    world = World(burst_ahead_sec=30.0)
    job = world.job()

    result = world.claim(NOON - timedelta(seconds=20))

    assert result.dispatched == 1
    assert [(o.message.execution_id, o.delay_sec) for o in world.lanes.sent] == [
        (execution_id(job.job_id, NOON), 20)
    ], "invariant 5: a burst claimed 20 s early reaches the workers at its second"


def test_a_job_whose_run_depends_on_its_instant_waits_for_the_regular_claim() -> None:
    world = World(burst_ahead_sec=30.0)
    job = world.job(overlap="skip")

    result = world.claim(NOON - timedelta(seconds=20))

    assert (world.states(), result.left) == ([], 1), (
        "invariant 8: an overlap policy judges the previous run as it is at the occurrence"
    )
    assert world.due.indexed(TENANT, job.job_id) == [NOON]


def test_a_bounded_claim_takes_a_quiet_tenants_item_beside_a_floods_share() -> None:
    world = World(claim_max_items=3, fair_queue_sec=None)
    flood = [world.job(tenant_id="flood") for _ in range(60)]
    quiet = world.job(tenant_id="quiet")

    result = world.claim()

    sent = [o.message.tenant_id for o in world.lanes.sent]
    assert (sent.count("quiet"), sent.count("flood")) == (1, 3), (
        "docs/FAIRNESS.md: a tenant the read saw all of is taken whole, a backlogged one only "
        "up to claim_max_items, so a flood does not delay a quiet tenant's occurrence"
    )
    waiting = [j for j in flood if world.due.indexed("flood", j.job_id) == [NOON]]
    assert (result.dispatched, len(waiting)) == (4, len(flood) - 3), (
        "invariant 1: the flood's items the claim did not take stay indexed for the next one"
    )
    assert world.jobs.get("quiet", quiet.job_id).next_run_time == NOON + MINUTE


def test_a_claim_whose_advance_finds_the_job_moved_on_by_another_indexes_it_where_it_points(
    world: World,
) -> None:
    job = world.job()
    elsewhere = NOON + 2 * MINUTE

    def moved_by_another_claim(_: JobRecord) -> None:
        world.jobs.before_advance = None
        assert world.jobs.advance(job, NOON, elsewhere).applied

    world.jobs.before_advance = moved_by_another_claim
    world.claim()

    assert world.jobs.get(TENANT, job.job_id).next_run_time == elsewhere
    assert elsewhere in world.due.indexed(TENANT, job.job_id), (
        "invariant 1: whatever removed the other claim's item, the job is indexed where it points"
    )
