"""The fair claim's share in a split minute (docs/FAIRNESS.md, "Claim budget"): a tick that
claims a minute's N*k partitions divides the lanes' room between all N*k claims, so a backlogged
tenant is sent its share of the room once, not k times. Driven through the ticker and the real
claimer over the in-memory tables, with the lanes' measure fixed."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from takt.config import Settings
from takt.dispatch.claimer import FAIR_READ_PAGE, Claimer, ClaimerSettings
from takt.dispatch.ticker import SPLIT_SWEEP_EVERY_SEC, ClaimTask, InlineFanout, Ticker
from takt.fairness.adaptive import LaneGauge, LaneState
from tests.support.fakes import FakeDue, FakeExecutions, FakeJobs, FakeLanes
from tests.support.jobs import make_job

MINUTE = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
# A sweep tick, which claims every partition of a split minute on its own.
SWEEP = MINUTE + timedelta(seconds=SPLIT_SWEEP_EVERY_SEC)
N = 2
SPLIT = 4
# Jobs a partition holds on average (random ids, so their partitions vary, and the base shards
# keep what was written before the minute split): a partition holding fewer than a read's page
# (`FAIR_READ_PAGE`) would find its flood quiet and send all of it. At 80 a partition, one in
# several dozen runs had a sub-partition of 49 (140 sent for a room of 104, in CI on 6cd484f).
JOBS_PER_PARTITION = 160
# The lanes' room a claim's tick shares: what each lane drains in a second and half a second of
# it queued ahead (fair_queue_sec 0.5), less what is queued there. The fast lane `default`
# drains 22 a second with one message queued, the overflow lane `low` 48 with none.
FAST_DRAIN, FAST_QUEUED, FAST_ROOM = 22.0, 1, 32  # 22 x 1.5 - 1
OVERFLOW_DRAIN, OVERFLOW_ROOM = 48.0, 72  # 48 x 1.5


class FixedGauge(LaneGauge):
    """The lanes as one fixed sample (a gauge that reads no queue, so the claims' shares are
    exact)."""

    def __init__(self) -> None:
        self.monotonic = lambda: 0.0
        self._fixed = LaneState(
            {"default": FAST_QUEUED, "low": 0}, {"default": FAST_DRAIN, "low": OVERFLOW_DRAIN}, 1
        )

    def state(self) -> LaneState:
        return self._fixed

    def sent(self, lane: str, count: int) -> None:
        """The fixed sample does not move with what is sent."""


def test_a_backlog_in_a_minute_split_k_ways_is_sent_its_share_of_the_lanes_room_once() -> None:
    settings = Settings(
        claimer_threads=1,
        due_shards=N,
        due_split_items=5,
        due_split_max=SPLIT,
        claim_max_items=1,
        fair_queue_sec=0.5,
    )
    jobs, due, lanes = FakeJobs(), FakeDue(N, split_items=5, split_max=SPLIT), FakeLanes()
    created = MINUTE - timedelta(hours=1)
    for _ in range(JOBS_PER_PARTITION * N * SPLIT):
        job = make_job(now=created, next_run_time=MINUTE, tenant_id="flood", schedule="* * * * *")
        due.put(job.tenant_id, job.job_id, MINUTE, created)
        jobs.put(job)
    assert due.partitions(MINUTE) == N * SPLIT, "the flood's minute is split k ways"
    held = Counter(bucket for bucket, _ in due.items)
    assert min(held.values()) > FAIR_READ_PAGE, (
        f"the premise: every partition holds more than a read's page, so its claim finds the "
        f"flood backlogged ({sorted(held.values())})"
    )
    claimer = Claimer(
        ClaimerSettings.of(settings), jobs, due, FakeExecutions(), lanes, gauge=FixedGauge()
    )
    claimed: list[ClaimTask] = []

    def claim(minute: datetime, shard: int, now: datetime, ways: int | None) -> object:
        claimed.append(ClaimTask(minute, shard, now, partitions=ways))
        return claimer.claim(minute, shard, now, ways)

    due.advance_watermark(MINUTE)
    Ticker(due, InlineFanout(claim, 1), 5, timedelta(0)).tick(SWEEP)  # type: ignore[arg-type]

    ours = [task for task in claimed if task.minute == MINUTE]
    assert sorted(task.shard for task in ours) == list(range(N * SPLIT))
    assert {task.partitions for task in ours} == {N * SPLIT}, (
        "docs/FAIRNESS.md: each claim of a split minute is told the N*k partitions its tick claims"
    )
    sent = [o.lane for o in lanes.sent if o.message.tenant_id == "flood"]
    assert len(sent) == FAST_ROOM + OVERFLOW_ROOM, (
        "docs/FAIRNESS.md: a backlogged tenant's claims share the lanes' room between the N*k "
        "partitions a tick claims of a split minute, so the tick sends the room once, not k times"
    )
    assert sent.count("default") == FAST_ROOM, (
        "docs/FAIRNESS.md: the fast lanes' headroom is shared between the N*k claims too, so a "
        "split minute's flood keeps its own lane for the fast room once and overflows the rest"
    )
