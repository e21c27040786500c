"""A discrete-event simulation of deployed takt, to size it before launch.

The simulated system is the design as it ships: a ticker each whole second probes every
(minute bucket, shard) partition of the due index (`probe_threads` at a time) and invokes one
claimer per partition with work, one after another; a claimer dispatches everything due within
`dispatch_ahead_sec` in its partition, writing item by item (`claim_parallelism` at a time), and
sends the messages once every execution is written; the lane's SQS event source mapping hands
batches to worker invocations, which handle a batch's messages one after another and hold a
message claimed early until its second.

Events fall on a 50 ms grid (ticks, claim starts and ends, batch starts and ends, scaling
steps); executions move as cohorts (a count due at one instant), so a million executions are a
few thousand events. AWS's limits act where they do in AWS: account concurrency shared by every
function, each function's +1,000 instances per 10 s, the event source's +300 concurrent batches
a minute up to the lane's maximum, cold starts for instances beyond the warm pool, and write
throughput per DynamoDB partition (the due index's partitions, the `open` index's `open_shards`
partitions, the jobs table's tenants) and per on-demand table (twice its previous peak). A
resource asked for more than it serves makes the work that needs it wait (throttling with
retries), which is how it surfaces as lag.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from takt.capacity.model import CallProfile, Design, Limits

STEP = 0.05
BIN_MS = 10


@dataclass(frozen=True)
class Load:
    """Occurrences due: `steady_per_sec` spread evenly, plus `burst` in the minute starting at
    `burst_at` (a `burst_at_zero` share of it at that very instant, the rest over the minute)."""

    steady_per_sec: float
    duration_sec: float = 120.0
    burst: float = 0.0
    burst_at: float = 60.0
    burst_at_zero: float = 0.2

    def cohorts(self) -> list[tuple[float, float]]:
        """(due instant, count), in 100 ms slices, in time order."""
        out: list[tuple[float, float]] = []
        slices = int(self.duration_sec * 10)
        # Seconds 1-59 of the burst minute (590 slices) share what is not due at second 0.
        spread = self.burst * (1 - self.burst_at_zero) / 590 if self.burst else 0.0
        for i in range(slices):
            t = i / 10
            count = self.steady_per_sec / 10
            if self.burst and self.burst_at <= t < self.burst_at + 60:
                count += spread if t >= self.burst_at + 1 else 0.0
                if t == self.burst_at:
                    count += self.burst * self.burst_at_zero
            out.append((t, count))
        return out


@dataclass
class _Bucket:
    """A token bucket: `rate` units a second, one second of burst."""

    rate: float
    tokens: float = 0.0
    at: float = 0.0
    used: dict[int, float] = field(default_factory=dict)

    def take(self, now: float, units: float) -> float:
        """Take `units` at `now`; returns how long the taker waits for them (0 if available)."""
        self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
        self.at = now
        self.tokens -= units
        second = int(now)
        self.used[second] = self.used.get(second, 0.0) + units
        return max(0.0, -self.tokens / self.rate)

    @property
    def peak(self) -> float:
        return max(self.used.values(), default=0.0)


@dataclass
class _Histogram:
    """Weighted lags in 10 ms bins."""

    bins: dict[int, float] = field(default_factory=dict)
    total: float = 0.0

    def add(self, seconds: float, weight: float) -> None:
        if weight <= 0:
            return
        key = max(0, int(seconds * 1000 / BIN_MS))
        self.bins[key] = self.bins.get(key, 0.0) + weight
        self.total += weight

    def quantile(self, q: float) -> float:
        if not self.total:
            return 0.0
        seen = 0.0
        for key in sorted(self.bins):
            seen += self.bins[key]
            if seen >= q * self.total - 1e-9:
                return key * BIN_MS / 1000
        return max(self.bins) * BIN_MS / 1000

    def summary(self) -> dict[str, float]:
        return {
            "p50": round(self.quantile(0.5), 2),
            "p99": round(self.quantile(0.99), 2),
            "max": round(self.quantile(1.0), 2),
        }


@dataclass
class SimResult:
    """What one run of a scenario shows; times in seconds."""

    design: Design
    dispatched_per_sec: dict[int, float]
    dispatch_lag: dict[str, float]
    start_lag: dict[str, float]
    burst_dispatched_within_sec: float | None
    peak_concurrency: dict[str, float]
    concurrency_wanted: float
    peak_write_units: dict[str, float]
    write_capacity: dict[str, float]
    undispatched: float
    unstarted: float

    @property
    def throttled(self) -> list[str]:
        return [
            name
            for name, peak in self.peak_write_units.items()
            if peak > self.write_capacity.get(name, math.inf) * 1.0001
        ]


class Simulator:
    def __init__(
        self,
        load: Load,
        design: Design,
        limits: Limits | None = None,
        calls: CallProfile | None = None,
        *,
        warm_rate: float | None = None,
        probe_threads: int = 8,
        invoke_ms: float = 15.0,
        drain_sec: float = 600.0,
    ) -> None:
        self.load = load
        self.design = design
        self.limits = limits or Limits()
        self.calls = calls or CallProfile()
        # The rate the system ran at before the simulated window: it sets the warm instance
        # pools, the event source's concurrency and the tables' previous peak.
        self.warm_rate = load.steady_per_sec if warm_rate is None else warm_rate
        self.probe_threads = probe_threads
        self.invoke_ms = invoke_ms
        self.drain_sec = drain_sec

    def run(self) -> SimResult:  # noqa: PLR0915 - one loop over the grid, step by step
        d, lim, calls = self.design, self.limits, self.calls
        shards: list[deque[list[float]]] = [deque() for _ in range(d.due_shards)]
        pending = deque(self.load.cohorts())
        claim_busy = [0.0] * d.due_shards
        claims_running: list[float] = []
        queue: deque[list[float]] = deque()  # [visible_at, due, count]
        batches: dict[int, float] = {}  # end step -> batches
        msg_s = calls.message_seconds(d)
        batch_s = d.batch_size * msg_s
        warm_workers = self.warm_rate * msg_s * 1.2
        warm_claims = float(min(d.due_shards, max(1.0, self.warm_rate / 50)))
        esm_cap = max(float(lim.esm_initial_concurrency), warm_workers)
        worker_fn_cap = max(warm_workers, float(lim.function_scale_per_10_sec))
        running_batches = 0.0
        peak = {"worker": 0.0, "claimer": 0.0, "total": 0.0}
        wanted = 0.0
        # Previous peak: the table has served twice the warm rate before (on-demand doubles it).
        table_rate = max(
            lim.new_table_write_units_per_sec,
            2 * self.warm_rate * calls.table_write_units_per_execution,
        )
        table = _Bucket(table_rate, table_rate)
        open_index = _Bucket(d.open_shards * lim.partition_write_units_per_sec)
        open_index.tokens = open_index.rate
        jobs = _Bucket(d.tenants * lim.partition_write_units_per_sec)
        jobs.tokens = jobs.rate
        due_parts = [_Bucket(lim.partition_write_units_per_sec) for _ in range(d.due_shards)]
        for part in due_parts:
            part.tokens = part.rate
        dispatched: dict[int, float] = {}
        dispatch_lag, start_lag = _Histogram(), _Histogram()
        burst_last: float | None = None
        end = self.load.duration_sec + self.drain_sec
        steps = int(end / STEP)
        for step in range(steps + 1):
            now = step * STEP
            while pending and pending[0][0] <= now + d.dispatch_ahead_sec + 1:
                due, count = pending.popleft()
                for shard in shards:
                    shard.append([due, count / d.due_shards])
            claims_running = [t for t in claims_running if t > now]
            running_batches -= batches.pop(step, 0.0)
            if step % round(1 / STEP) == 0:
                busy = [
                    i
                    for i, shard in enumerate(shards)
                    if shard and shard[0][0] <= now + d.dispatch_ahead_sec
                ]
                probes = d.due_shards * 2
                fanout_at = (
                    now + math.ceil(probes / self.probe_threads) * calls.dynamodb_latency_ms / 1000
                )
                for order, i in enumerate(busy):
                    start = fanout_at + order * self.invoke_ms / 1000
                    if claim_busy[i] > start:
                        continue
                    free = lim.account_concurrency - running_batches - len(claims_running)
                    if free < 1:
                        continue
                    horizon = now + d.dispatch_ahead_sec
                    taken: list[list[float]] = []
                    while shards[i] and shards[i][0][0] <= horizon:
                        taken.append(shards[i].popleft())
                    items = sum(c for _, c in taken)
                    cold = lim.cold_start_ms / 1000 if len(claims_running) >= warm_claims else 0.0
                    sent, done = calls.claim_seconds(math.ceil(items), d)
                    wait = table.take(start, items * (calls.table_write_units_per_execution / 3))
                    wait = max(
                        wait, due_parts[i].take(start, items * calls.due_write_units_per_item)
                    )
                    wait = max(
                        wait, jobs.take(start, items * calls.jobs_write_units_per_execution / 2)
                    )
                    sent_at = start + cold + wait + sent
                    claim_busy[i] = start + cold + wait + done
                    claims_running.append(claim_busy[i])
                    for due, count in taken:
                        queue.append([sent_at + calls.delivery_ms / 1000, due, count])
                        dispatched[int(sent_at)] = dispatched.get(int(sent_at), 0.0) + count
                        dispatch_lag.add(sent_at - due, count)
                        if self.load.burst and self.load.burst_at <= due < self.load.burst_at + 60:
                            burst_last = max(burst_last or 0.0, sent_at - self.load.burst_at)
                peak["claimer"] = max(peak["claimer"], float(len(claims_running)))
            visible = sum(c for v, _, c in queue if v <= now)
            if visible > 0 and running_batches >= min(esm_cap, d.lane_max_concurrency) - 1e-9:
                esm_cap = min(
                    float(d.lane_max_concurrency), esm_cap + lim.esm_scale_per_minute / 60 * STEP
                )
            worker_fn_cap = worker_fn_cap + lim.function_scale_per_10_sec / 10 * STEP
            cap = min(
                esm_cap,
                float(d.lane_max_concurrency),
                worker_fn_cap,
                lim.account_concurrency - len(claims_running),
            )
            wanted = max(wanted, running_batches + visible / d.batch_size)
            free_slots = max(0.0, cap - running_batches)
            start_batches = min(free_slots, visible / d.batch_size)
            if start_batches > 0:
                take = start_batches * d.batch_size
                cold = (
                    lim.cold_start_ms / 1000
                    if running_batches + start_batches > warm_workers
                    else 0.0
                )
                wait = table.take(now, take * calls.table_write_units_per_execution * 2 / 3)
                wait = max(
                    wait, open_index.take(now, take * calls.open_index_write_units_per_execution)
                )
                wait = max(wait, jobs.take(now, take * calls.jobs_write_units_per_execution / 2))
                longest = 0.0
                while take > 1e-9 and queue and queue[0][0] <= now:
                    entry = queue[0]
                    part = min(entry[2], take)
                    for pos in range(d.batch_size):
                        begin = max(now + cold + wait + pos * msg_s, entry[1])
                        start_lag.add(begin - entry[1], part / d.batch_size)
                        longest = max(longest, begin - now + msg_s)
                    entry[2] -= part
                    take -= part
                    if entry[2] <= 1e-9:
                        queue.popleft()
                duration = max(batch_s, longest)
                running_batches += start_batches
                finish = step + max(1, math.ceil(duration / STEP))
                batches[finish] = batches.get(finish, 0.0) + start_batches
            peak["worker"] = max(peak["worker"], running_batches)
            peak["total"] = max(peak["total"], running_batches + len(claims_running))
            if now > self.load.duration_sec and not queue and not any(shards) and not pending:
                break
        return SimResult(
            design=d,
            dispatched_per_sec=dispatched,
            dispatch_lag=dispatch_lag.summary(),
            start_lag=start_lag.summary(),
            burst_dispatched_within_sec=None if burst_last is None else round(burst_last, 1),
            peak_concurrency={k: round(v) for k, v in peak.items()},
            concurrency_wanted=round(wanted),
            peak_write_units={
                "table (on-demand)": round(table.peak),
                "open index (all shards)": round(open_index.peak),
                "jobs (all tenants)": round(jobs.peak),
                "due partition (busiest)": round(max(p.peak for p in due_parts)),
            },
            write_capacity={
                "table (on-demand)": table.rate,
                "open index (all shards)": open_index.rate,
                "jobs (all tenants)": jobs.rate,
                "due partition (busiest)": lim.partition_write_units_per_sec,
            },
            undispatched=sum(c for shard in shards for _, c in shard) + sum(c for _, c in pending),
            unstarted=sum(c for _, _, c in queue),
        )
