"""The in-memory tables (tests/support/fakes) answer as the DynamoDB stores do: each test runs
one script of reads and conditional writes against a fake and against the real store on moto,
and the two must see the same answers, step by step. The engines' unit tests
(tests/unit/dispatch/test_claimer_decisions.py, tests/unit/watchdog, tests/unit/worker) rest
on the fakes; this is what keeps a fake's condition from drifting from the store's expression.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from botocore.exceptions import ClientError

from takt.aws import AwsClients
from takt.models.ids import execution_id, format_time, new_job_id, to_ms
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.store.due import DueStore, shard_of
from takt.store.errors import ExecutionConflictError, NotFoundError
from takt.store.executions import ExecutionStore, lease_fence, open_shard_of
from takt.store.ports import ClaimerJobs, ExecutionRef, RegionLeases, Transition
from takt.wiring import Services
from tests.support.fakes import FakeDue, FakeExecutions, FakeJobs, FakeRegionLeases
from tests.support.jobs import TENANT, job_id_in_shard, make_job
from tests.support.regions import fresh_lease_table, lease_store

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
JOB_ID = new_job_id()
# What a write that must be refused would set.
STALE = {"error": "a stale writer's report"}


def _job(job_id: str) -> JobRecord:
    return make_job(now=NOON, next_run_time=NOON, schedule="* * * * *", job_id=job_id)


def _jobs_script(jobs: ClaimerJobs, create: Callable[[JobRecord], object]) -> list[object]:
    job = _job(JOB_ID)
    create(job)
    seen: list[object] = []
    seen.append(jobs.advance(job, NOON + MINUTE, NOON + 2 * MINUTE).applied)
    seen.append(jobs.advance(job.model_copy(update={"version": 2}), NOON, NOON + MINUTE))
    seen.append(jobs.advance(job, NOON, NOON + MINUTE, active_execution="x1"))
    stale = jobs.advance(job, NOON, NOON + MINUTE)
    seen.append((stale.applied, stale.current and stale.current.next_run_time))
    seen.append(jobs.take_slot(TENANT, JOB_ID, "x2", expected=None))
    seen.append(jobs.take_slot(TENANT, JOB_ID, "x2", expected="x1"))
    jobs.release_slot(TENANT, JOB_ID, "x1")
    seen.append(jobs.get(TENANT, JOB_ID).active_execution)
    jobs.release_slot(TENANT, JOB_ID, "x2")
    seen.append(jobs.get(TENANT, JOB_ID).active_execution)
    seen.append(jobs.outcome_settled(TENANT, JOB_ID))
    failed = jobs.record_outcome(TENANT, JOB_ID, f"{JOB_ID}.b", "failed", NOON)
    seen.append(failed and (failed.failure_streak, failed.incidents, failed.job is not None))
    seen.append(jobs.record_outcome(TENANT, JOB_ID, f"{JOB_ID}.a", "succeeded", NOON))
    seen.append(jobs.outcome_settled(TENANT, JOB_ID))
    seen.append(jobs.record_outcome(TENANT, JOB_ID, f"{JOB_ID}.c", "succeeded", NOON))
    seen.append(jobs.outcome_settled(TENANT, JOB_ID))
    seen.append(jobs.record_outcome(TENANT, "job_gone", "job_gone.a", "failed", NOON))
    seen.append(jobs.note_unindexed(TENANT, JOB_ID, NOON))
    seen.append(jobs.note_unindexed(TENANT, JOB_ID, NOON))
    seen.append(jobs.note_unindexed(TENANT, "job_gone", NOON))
    found, unreadable = jobs.batch_read([(TENANT, JOB_ID), (TENANT, "job_gone")])
    seen.append((sorted(found), unreadable))
    seen.append(jobs.get(TENANT, JOB_ID))
    return seen


def test_the_fake_jobs_table_answers_as_the_job_store_does(svc: Services) -> None:
    fake = FakeJobs()

    assert _jobs_script(fake, fake.put) == _jobs_script(svc.jobs, svc.jobs.create), (
        "FakeJobs must evaluate the job store's conditions (advance fenced on the version, "
        "the slot on its holder, outcomes only forward)"
    )


def _conflict(write: Callable[[], object]) -> object:
    """What a write answered: its record, or the error's kind and the execution as it is."""
    try:
        return write()
    except ExecutionConflictError as exc:
        return ("conflict", exc.current)
    except NotFoundError:
        return "not found"


def _executions_script(executions: FakeExecutions | ExecutionStore) -> list[object]:
    job = _job(JOB_ID)
    first = ExecutionRecord.for_job(job, execution_id(JOB_ID, NOON), NOON, ExecState.PENDING, NOON)
    queued = ExecutionRecord.for_job(
        job, execution_id(JOB_ID, NOON + MINUTE), NOON + MINUTE, ExecState.QUEUED, NOON
    )
    ref = ExecutionRef(TENANT, first.execution_id)
    shard = open_shard_of(first.execution_id, executions.open_shards)
    seen: list[object] = []
    seen.append(executions.create(first, check_at_ms=None))
    seen.append(executions.create(first, check_at_ms=None))
    seen.append(executions.create(queued, check_at_ms=7_000))
    seen.append(executions.watched([ref, ExecutionRef(TENANT, "not an id")]))
    seen.append(executions.watch_open(ref, 1_000))
    seen.append(executions.watch_open(ref, 1_000))
    seen.append(executions.watched([ref]))
    seen.append([c.execution_id for c in executions.open_candidates(shard, 1_000)])
    seen.append(executions.open_candidates(shard, 999))
    seen.append(executions.first_queued(TENANT, JOB_ID))
    key = (TENANT, first.execution_id)
    seen.append(
        _conflict(
            lambda: executions.transition(
                *key, Transition(expect={"state": ExecState.PENDING, "attempt": 2}, set=STALE)
            )
        )
    )
    leased = executions.transition(
        *key,
        Transition(
            expect={"state": (ExecState.PENDING, ExecState.RETRY_WAIT), "attempt": 1},
            set={"state": ExecState.RUNNING, "lease_token": "t1", "lease_expires_at": 5_000},
            set_if_absent={"lag_ms": 3},
        ),
    )
    seen.append(leased)
    beat = executions.transition(
        *key,
        Transition(expect=lease_fence(leased), set={"check_at": 6_000}, add={"heartbeat_seq": 1}),
    )
    seen.append(beat)
    executions.transition(*key, Transition(expect={}, set={"cancel_requested": True}))
    seen.append(
        _conflict(
            lambda: executions.transition(
                *key,
                Transition(
                    expect=lease_fence(beat), set=STALE, expect_absent=("cancel_requested",)
                ),
            )
        )
    )
    ended = executions.transition(
        *key,
        Transition(
            expect=lease_fence(beat),
            set={"state": ExecState.SUCCEEDED, "finished_at": format_time(NOON)},
            remove=("open_shard", "check_at", "lease_token", "lease_expires_at"),
            append_attempt={"attempt": 1, "outcome": "succeeded"},
        ),
    )
    seen.append(ended)
    seen.append(executions.open_candidates(shard, 10**13))
    seen.append(executions.watched([ref]))
    seen.append(executions.watch_open(ref, 1_000))
    seen.append(executions.newest_ended_after(TENANT, JOB_ID, None, consistent=True))
    seen.append(executions.newest_ended_after(TENANT, JOB_ID, first.execution_id, consistent=True))
    executions.record_fenced(*key)
    executions.record_fenced(TENANT, execution_id(JOB_ID, NOON + 2 * MINUTE))
    seen.append(executions.get(*key).fenced_reports)
    seen.append(
        _conflict(
            lambda: executions.transition(
                TENANT, execution_id(JOB_ID, NOON + 3 * MINUTE), Transition(expect={}, set=STALE)
            )
        )
    )
    try:
        executions.leave_open_index(f"{TENANT}#{JOB_ID}", "no such key")
    except ClientError as exc:
        seen.append(exc.response["Error"]["Code"])
    return seen


def test_the_fake_executions_table_answers_as_the_execution_store_does(svc: Services) -> None:
    fake = FakeExecutions(open_shards=svc.executions.open_shards)

    assert _executions_script(fake) == _executions_script(svc.executions), (
        "FakeExecutions must evaluate a Transition's fence, attribute_not_exists and the open "
        "index as the execution store's expressions do"
    )


def _due_script(due: FakeDue | DueStore) -> list[object]:
    shard = shard_of(TENANT, JOB_ID, due.shards)
    seen: list[object] = []
    due.put(TENANT, JOB_ID, NOON + timedelta(seconds=5), NOON - MINUTE)
    due.put(TENANT, "job_late", NOON + timedelta(seconds=50), NOON - MINUTE)
    read = due.read_due(NOON, shard, NOON + timedelta(seconds=10))
    seen.append(read)
    item = read.items[0]
    due.put(TENANT, JOB_ID, NOON + timedelta(seconds=5), NOON)
    seen.append(due.delete_if_unchanged(item))
    seen.append(due.delete_if_unchanged(replace(item, written_ms=to_ms(NOON))))
    seen.append(due.read_due(NOON, shard, NOON + MINUTE).items)
    due.delete_raw(item.bucket, item.due_key)
    seen.append(due.read_due(NOON, shard, NOON + MINUTE).items)
    due.watches.add(3, to_ms(NOON), [ExecutionRef(TENANT, "x1"), ExecutionRef(TENANT, "x2")])
    watches = [w for s in range(due.watches.shards) for w in due.watches.due(s, NOON + MINUTE)]
    seen.append([(w.check_at, w.executions) for w in watches])
    for watch in watches:
        due.watches.done(watch)
    seen.append([w for s in range(due.watches.shards) for w in due.watches.due(s, NOON + MINUTE)])
    return seen


def _fair_script(due: FakeDue | DueStore, flood: list[str], quiet: str) -> list[object]:
    """A bounded claim's reads of a partition a flood shares with a quiet tenant's item."""
    at = NOON + timedelta(seconds=1)
    for job_id in flood:
        due.put("flood", job_id, at, NOON - MINUTE)
    due.put("quiet", quiet, at + timedelta(seconds=1), NOON - MINUTE)
    due.put("flood", flood[0], at + timedelta(seconds=2), NOON - MINUTE)
    shard = shard_of("quiet", quiet, due.shards)
    until = NOON + timedelta(seconds=10)
    return [due.read_fair(NOON, shard, until, page, pages) for page, pages in FAIR_READS]


# (page, pages) of the bounded reads compared: one query, the pages running out, enough pages.
FAIR_READS = ((5, 1), (5, 2), (5, 3), (20, 3))


def _split_script(due: FakeDue | DueStore) -> list[object]:
    """A minute written until it splits: its split, and how many items each partition holds."""
    for i in range(120):
        due.put(TENANT, f"split{i:03d}", NOON + timedelta(seconds=i % 60), NOON - MINUTE)
    partitions = due.partitions(NOON)
    held = [len(due.read_due(NOON, shard, NOON + MINUTE).items) for shard in range(partitions)]
    return [due.splits([NOON, NOON + MINUTE]), partitions, held]


def test_the_fake_due_table_splits_a_minute_as_the_due_store_does(svc: Services) -> None:
    store = DueStore(
        svc.clients.dynamodb,
        svc.settings.due_table,
        2,
        split_items=5,
        split_max=4,
        monotonic=lambda: 0.0,
    )
    fake = FakeDue(shards=2, split_items=5, split_max=4, monotonic=lambda: 0.0)

    assert _split_script(fake) == _split_script(store), (
        "FakeDue must count a minute and spread its items over N*k partitions as the store does"
    )


def test_the_fake_due_tables_bounded_reads_answer_as_the_due_stores_do(svc: Services) -> None:
    fake = FakeDue(shards=svc.due.shards)
    quiet = job_id_in_shard("quiet", 0, svc.due.shards)
    flood = [job_id_in_shard("flood", 0, svc.due.shards) for _ in range(8)]

    assert _fair_script(fake, flood, quiet) == _fair_script(svc.due, flood, quiet), (
        "FakeDue.read_fair must page as the due store does: a full page skips its last run"
    )


def test_the_fake_due_table_answers_as_the_due_store_does(svc: Services) -> None:
    fake = FakeDue(shards=svc.due.shards)

    assert _due_script(fake) == _due_script(svc.due), (
        "FakeDue must read and delete due items (unless rewritten) as the due store does"
    )


def _region_lease_script(leases: RegionLeases) -> list[object]:
    seen: list[object] = [leases.read(), leases.create("us-east-1"), leases.create("us-west-2")]
    first = leases.read()
    assert first is not None
    seen.append(leases.renew("us-east-1", 1))
    seen.append(leases.renew("us-west-2", 1))
    seen.append(leases.take_over(first, "us-west-2"))
    now = leases.read()
    assert now is not None
    seen.append(leases.take_over(now, "us-west-2"))
    seen.append(leases.renew("us-east-1", 1))
    seen.append(leases.promote("us-east-1"))
    seen.append(leases.renew("us-east-1", 3))
    seen.append(leases.read())
    return seen


def test_the_fake_region_lease_answers_as_the_lease_store_does(clients: AwsClients) -> None:
    store = lease_store(clients, fresh_lease_table(clients))

    assert _region_lease_script(FakeRegionLeases()) == _region_lease_script(store), (
        "FakeRegionLeases must evaluate the lease store's conditions (renewal on holder and "
        "epoch, take-over on the state seen, the first lease only once)"
    )
