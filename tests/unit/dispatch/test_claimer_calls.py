"""How many requests a claim makes for its items: a claim is bound by its calls' CPU
(docs/CAPACITY.md, "The claimer's CPU per item"), so what may go out in batches does, and
every conditional write stays one of its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from takt.config import Settings
from takt.dispatch.claimer import INDEX_BATCH, Claimer, ClaimerSettings
from takt.store.due import minute_of
from tests.support.fakes import FakeDue, FakeExecutions, FakeJobs, FakeLanes, FakeQuarantine
from tests.support.jobs import TENANT, make_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
NEXT = NOON + timedelta(minutes=1)
CREATED = NOON - timedelta(hours=1)


class Partition:
    """One partition's tables, its jobs every minute and due at noon, and a claimer over them."""

    def __init__(self, jobs: int) -> None:
        settings = Settings(claimer_threads=1, due_shards=1, claim_max_items=None)
        self.jobs = FakeJobs()
        self.due = FakeDue(shards=1)
        self.executions = FakeExecutions()
        self.quarantine = FakeQuarantine()
        self.job_ids = []
        for _ in range(jobs):
            job = make_job(now=CREATED, next_run_time=NOON, schedule="* * * * *")
            self.due.put(job.tenant_id, job.job_id, NOON, CREATED)
            self.job_ids.append(self.jobs.put(job).job_id)
        self.claimer = Claimer(
            ClaimerSettings.of(settings),
            self.jobs,
            self.due,
            self.executions,
            FakeLanes(),
            quarantine=self.quarantine,
        )

    def claim(self) -> int:
        return self.claimer.claim(minute_of(NOON), 0, NOON).dispatched


def test_a_claim_indexes_its_next_occurrences_twenty_five_to_a_request() -> None:
    partition = Partition(jobs=INDEX_BATCH + 5)

    assert partition.claim() == INDEX_BATCH + 5
    assert partition.due.batches == [INDEX_BATCH, 5], (
        "claimer CPU per item: step 3's unconditional puts go out 25 to a BatchWriteItem"
    )
    assert all(partition.due.indexed(TENANT, j) == [NEXT] for j in partition.job_ids), (
        "invariant 2: every job is indexed at its next occurrence and its fired item is gone"
    )


def test_a_batch_dynamodb_refuses_for_one_job_parks_that_job_and_indexes_the_others() -> None:
    partition = Partition(jobs=3)
    bad, *good = partition.job_ids
    partition.due.refused.add(bad)

    partition.claim()

    assert [p.key["job_id"] for p in partition.quarantine.parked] == [bad], (
        "invariant 9: a record DynamoDB refuses in a batch parks its job alone"
    )
    assert partition.due.indexed(TENANT, bad) == [], "no later claim meets it again"
    assert all(partition.due.indexed(TENANT, j) == [NEXT] for j in good), (
        "invariant 2: the batch's other jobs are indexed at their next occurrence"
    )
    assert all(partition.jobs.get(TENANT, j).next_run_time == NEXT for j in good)
