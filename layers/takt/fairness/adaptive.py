"""Fair shares that follow the lanes' measured drain rate, so fairness costs a lone tenant nothing.

A fixed claim bound and a fixed dispatch rate are wrong in both directions: set for contention
they hold a tenant alone to a fraction of the capacity, set for a tenant alone they let a flood
fill the lanes in front of everyone else. Both are derived here from what the lanes do:

- `LaneGauge` samples each lane's queued messages (SQS `ApproximateNumberOfMessages`, at most
  once a `sample_sec`, and only while a claim has a backlogged tenant to size) and counts what
  this process sent there; between two samples a lane drained what was queued plus what was
  sent minus what is queued now. The drain rate is a moving average of that.
- `claim_budget`: how many items of backlogged tenants one claim takes. Each lane should hold
  `queue_sec` seconds of work beyond what drains in the next second: the sum over the lanes of
  `drain * (1 + queue_sec) - queued` (none from a lane past it), split between the partitions a
  tick claims of the claim's minute (N*k of a minute split k ways), never below the configured
  floor
  (`claim_max_items`); a claim that took longer than its tick's second halves the next budget
  (the claimer's `CLAIM_TIME_SEC`: a quiet tenant's claim waits for the tick). While every lane
  is empty the workers are waiting, so the claim doubles from the last one
  (what drained is bounded by what they were given and by how long the ticks take). A tenant
  alone is claimed as fast as the lanes drain, growing from the floor until they stop keeping up
  (work-conserving); under contention it is the same number, shared.
- `fast_headroom`: how many of a claim's backlogged items may go to their own (fast) lane; the
  rest go to the overflow lane. The fast lanes may hold `queue_sec` seconds of their measured
  drain beyond the next second's, less what quiet tenants send now: a quiet tenant's message
  then waits behind at most `queue_sec` seconds of a flood, and a flood alone still fills the
  fast lanes (their drain grows with what they get) as well as the overflow lane.

Nothing here writes to DynamoDB: the cost of these shares is one `GetQueueAttributes` per lane a
second per claiming process while a backlog exists, none when idle. The measure is this
process's: with claims spread over many processes (the claimer Lambda), each one counts only its
own sends and so underestimates the drain (another process's sends look like a slower drain),
which errs on the fair side: smaller claims, more overflow. docs/FAIRNESS.md says what that
costs.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# Weight of the newest sample in the drain rate's moving average.
ALPHA = 0.5


@dataclass(frozen=True)
class LaneState:
    """Messages queued in each lane when last sampled, and each lane's drain rate a second."""

    queued: Mapping[str, int]
    drain_per_sec: Mapping[str, float]
    # Which sample this is: a budget follows the lanes once a sample, not once a claim.
    sample: int = 0

    def total_queued(self, lanes: set[str] | None = None) -> int:
        return sum(n for lane, n in self.queued.items() if lanes is None or lane in lanes)

    def total_drain(self, lanes: set[str] | None = None) -> float:
        return sum(r for lane, r in self.drain_per_sec.items() if lanes is None or lane in lanes)


class LaneGauge:
    """The lanes' queued messages and drain rates, as this process sees them (see the module)."""

    def __init__(
        self,
        sqs: SQSClient,
        lane_urls: Mapping[str, str],
        sample_sec: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sqs = sqs
        self._urls = dict(lane_urls)
        self._sample_sec = sample_sec
        # The gauge's clock; the claimer times its claims with it too (injected in tests).
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._sent = dict.fromkeys(self._urls, 0)
        self._sampled_at: float | None = None
        self._state = LaneState(dict.fromkeys(self._urls, 0), dict.fromkeys(self._urls, 0.0))

    def sent(self, lane: str, count: int) -> None:
        """Count `count` messages this process sent to `lane`."""
        with self._lock:
            if lane in self._sent:
                self._sent[lane] += count

    def state(self) -> LaneState:
        """The lanes as last sampled, sampling again when the sample is `sample_sec` old."""
        with self._lock:
            now = self.monotonic()
            if self._sampled_at is not None and now - self._sampled_at < self._sample_sec:
                return self._state
            queued = {lane: self._queued(url) for lane, url in self._urls.items()}
            if self._sampled_at is not None:
                elapsed = max(now - self._sampled_at, 1e-3)
                drain = {
                    lane: _average(
                        max(0.0, (self._state.queued[lane] + self._sent[lane] - n) / elapsed),
                        self._state.drain_per_sec[lane],
                        emptied=n == 0,
                    )
                    for lane, n in queued.items()
                }
            else:
                drain = dict(self._state.drain_per_sec)
            self._state = LaneState(queued, drain, self._state.sample + 1)
            self._sent = dict.fromkeys(self._urls, 0)
            self._sampled_at = now
            return self._state

    def _queued(self, url: str) -> int:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessages", "0"))


def _average(sample: float, previous: float, *, emptied: bool) -> float:
    """The moving average of a lane's drain. A lane that drained everything it had can drain at
    least what it did, whatever the average says (what it drained is bounded by what it was
    given), so it takes the sample when larger: a backlog's claims then grow by `1 + queue_sec`
    a second while the lanes keep up, instead of creeping up behind the average."""
    average = ALPHA * sample + (1 - ALPHA) * previous
    return max(sample, average) if emptied or previous == 0 else average


def claim_budget(state: LaneState, queue_sec: float, partitions: int, floor: int, last: int) -> int:
    """Items of backlogged tenants one claim takes (see the module): what keeps the lanes
    `queue_sec` seconds ahead of their drain, per partition, within the floor and the time
    bound."""
    # Lane by lane: a lane with more queued than it drains leaves the others' room alone, so a
    # slow overflow lane does not hold a backlog's claims to the floor while the fast lanes
    # have room (and the fast-lane share sends it there).
    wanted = sum(
        max(0.0, state.drain_per_sec[lane] * (1 + queue_sec) - queued)
        for lane, queued in state.queued.items()
    )
    # Rounded up: rounded down, a backlog claimed at a few items a partition would never grow.
    budget = max(floor, math.ceil(wanted / max(1, partitions)))
    if state.total_queued() == 0:
        # Every lane was empty: the workers wait for work, whatever the drain measured (it is
        # bounded by what they were given, and by how long the ticks take): double the claim.
        budget = max(budget, 2 * last)
    return budget


def fast_headroom(
    state: LaneState, queue_sec: float, overflow: str, partitions: int, floor: int, quiet: int
) -> int:
    """How many backlogged tenants' items one claim may send to their own lanes; the rest go to
    `overflow`. `quiet` is what this claim sends there for quiet tenants, who come first. Fast
    lanes with nothing queued take at least `floor`: their drain is measured from what they
    get, so without it a flood alone would never be measured there, and never sent there."""
    fast = {lane for lane in state.queued if lane != overflow}
    queued = state.total_queued(fast)
    room = math.floor((state.total_drain(fast) * (1 + queue_sec) - queued) / max(1, partitions))
    if queued == 0:
        room = max(room, floor)
    return max(0, room - quiet)
