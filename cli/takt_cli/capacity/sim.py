"""A discrete-event simulation of deployed takt, to size it before launch.

The simulated system is the design as it ships: a ticker each whole second probes every
(minute bucket, shard) partition of the due index (`probe_threads` at a time) and invokes one
claimer per partition with work, one after another; a claimer dispatches everything due within
`dispatch_ahead_sec` in its partition, writing item by item (`claim_parallelism` at a time), and
sends the messages once every execution is written; the lane's SQS event source mapping hands
batches to worker invocations, which run a batch's messages `batch_concurrency` at a time (all
at once as shipped; each a message's CPU after the one before it, as they share the
invocation's vCPU) and hold a message claimed early until its second.

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

import heapq
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from takt_cli.capacity.model import CallProfile, Design, Limits

STEP = 0.05
BIN_MS = 10
# A flood's due instant is moved by this much so its cohort stays apart from the steady load's
# cohort of the same slice all the way to the worker (the noisy-neighbour scenario).
FLOOD_MARK = 1e-7


@dataclass(frozen=True)
class Load:
    """Occurrences due: `steady_per_sec` spread evenly, plus `burst` in the minute starting at
    `burst_at` (a `burst_at_zero` share of it at that very instant, the rest over the minute)."""

    steady_per_sec: float
    duration_sec: float = 120.0
    burst: float = 0.0
    burst_at: float = 60.0
    burst_at_zero: float = 0.2
    # One tenant's flood, all due at `flood_at`: its start lags are kept apart from the rest.
    flood: float = 0.0
    flood_at: float = 30.0

    @property
    def flood_due(self) -> float | None:
        return self.flood_at + FLOOD_MARK if self.flood else None

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
        if self.flood_due is not None:
            out.append((self.flood_due, self.flood))
            out.sort(key=lambda cohort: cohort[0])
        return out


class _Rate:
    """Units spread over time intervals, summed per second (a difference array over seconds)."""

    def __init__(self) -> None:
        self._delta: dict[int, float] = {}

    def add(self, begin: float, end: float, units: float) -> None:
        end = max(end, begin + STEP)
        rate = units / (end - begin)
        first, last = int(begin), int(end)
        if first == last:
            self._bump(first, rate * (end - begin), first + 1, 0.0)
            return
        self._bump(first, rate * (first + 1 - begin), first + 1, 0.0)
        self._bump(first + 1, rate, last, rate)
        self._bump(last, rate * (end - last), last + 1, 0.0)

    def _bump(self, second: int, amount: float, until: int, rate: float) -> None:
        if rate:
            self._delta[second] = self._delta.get(second, 0.0) + rate
            self._delta[until] = self._delta.get(until, 0.0) - rate
        else:
            self._delta[second] = self._delta.get(second, 0.0) + amount
            self._delta[second + 1] = self._delta.get(second + 1, 0.0) - amount

    def series(self) -> dict[int, float]:
        """Units per second, second by second."""
        out: dict[int, float] = {}
        level = 0.0
        keys = sorted(self._delta)
        for second, following in zip(keys, [*keys[1:], None], strict=True):
            level += self._delta[second]
            for t in range(second, following if following is not None else second):
                out[t] = level
        return {t: v for t, v in out.items() if v > 1e-6}

    def peak(self) -> float:
        level, best = 0.0, 0.0
        for second in sorted(self._delta):
            level += self._delta[second]
            best = max(best, level)
        return best


class _Bucket:
    """A write-throughput limit: `rate` units a second, with one second of unused capacity to
    burst from. Work that asks for more waits until its units fit (throttling, retried), so a
    taker ends no earlier than the limit lets its units through."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._free_at = 0.0
        self.demand = _Rate()
        self.served = _Rate()
        self.delayed = 0.0

    def take(self, now: float, units: float, natural_sec: float) -> float:
        """Take `units` spread over `natural_sec` from `now`; the extra seconds the taker waits."""
        self.demand.add(now, now + natural_sec, units)
        self._free_at = max(self._free_at, now - 1.0) + units / self.rate
        extra = max(0.0, self._free_at - (now + natural_sec))
        self.served.add(now, now + natural_sec + extra, units)
        self.delayed = max(self.delayed, extra)
        return extra


def _take_while_running(
    during: Mapping[str, float],
    runs: float,
    now: float,
    mean_sec: float,
    table: _Bucket,
    index: _Bucket,
) -> None:
    """What `runs` started at `now` write while their calls last (`during`, per run and table:
    the lease's heartbeats, the watchdog's rechecks), spread over the mean call: it uses the
    tables' capacity, and a start after it waits if it ran out, but it does not delay these
    runs' own starts."""
    table.take(now, runs * during.get("executions", 0.0), mean_sec)
    index.take(now, runs * during.get("executions/open", 0.0), mean_sec)


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
    # Write units a second that the work asked for at its busiest, and what each resource serves.
    peak_write_units: dict[str, float]
    write_capacity: dict[str, float]
    # Resources that made work wait (throttled), with the longest wait they caused.
    throttled: dict[str, float]
    undispatched: float
    unstarted: float
    # With a flood in the load: the other executions' start lag, and how long after its due
    # instant the flood's last execution started (None: not all of it started).
    others_start_lag: dict[str, float] | None = None
    flood_started_within_sec: float | None = None
    flood_started: float = 0.0


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

    def run(self) -> SimResult:  # noqa: PLR0915 - one walk over the grid, step by step
        d, lim, calls = self.design, self.limits, self.calls
        shards: list[deque[list[float]]] = [deque() for _ in range(d.due_shards)]
        pending = deque(self.load.cohorts())
        claim_busy = [0.0] * d.due_shards
        claims_running: list[float] = []
        # Messages sent but not yet receivable (a heap of (visible_at, due, count)), and the
        # receivable ones ([due, count], oldest first).
        inflight: list[tuple[float, float, float]] = []
        queue: deque[list[float]] = deque()
        visible = 0.0
        in_shards = 0.0
        batches: dict[int, float] = {}  # the grid step a group of batches ends at -> batches
        msg_s = calls.message_seconds(d)
        cpu_s = calls.message_cpu_seconds(d)
        at_once = max(1, min(d.batch_concurrency, d.batch_size))
        batch_s = d.batch_waves * msg_s + (at_once - 1) * cpu_s
        offsets = _start_offsets(d.batch_size, at_once, msg_s, cpu_s)
        # A batch's invocation lasts until its slowest call ends: with a long tail, beyond the
        # mean its messages' own times assume.
        slowest_extra = calls.job.expected_max(at_once) - calls.job.mean_sec
        during = calls.duration_write_units_by_table
        fargate = _Fleet(d, calls) if d.fargate_tasks else None
        # Instances stay warm for minutes: a cold start is paid only beyond the most that ran.
        warm_workers = self.warm_rate / d.batch_size * (batch_s + d.dispatch_ahead_sec)
        warm_claims = float(min(d.due_shards, max(1.0, self.warm_rate / 50)))
        esm_cap = max(float(lim.esm_initial_concurrency), min(warm_workers, d.lane_max_concurrency))
        worker_fn_cap = max(warm_workers, float(lim.function_scale_per_10_sec))
        running = 0.0
        peak = {"worker": 0.0, "claimer": 0.0, "total": 0.0}
        wanted = 0.0
        # The tables ran at the warm rate before: on-demand serves twice a previous peak at once.
        table = _Bucket(
            min(
                lim.table_max_write_units_per_sec,
                max(
                    lim.new_table_write_units_per_sec,
                    2 * self.warm_rate * calls.table_write_units_per_execution,
                ),
            )
        )
        open_index = _Bucket(d.open_shards * lim.partition_write_units_per_sec)
        jobs = _Bucket(d.tenants * lim.partition_write_units_per_sec)
        due_parts = [_Bucket(lim.partition_write_units_per_sec) for _ in shards]
        claim_table_share = 1 / 3  # the claim writes the execution; the worker twice more
        dispatched = _Rate()
        dispatch_lag, start_lag = _Histogram(), _Histogram()
        others_lag, flood_due, flood_last, flood_started = (
            _Histogram(),
            self.load.flood_due,
            0.0,
            0.0,
        )
        burst_last: float | None = None
        ticks_every = round(1 / STEP)
        for step in range(int((self.load.duration_sec + self.drain_sec) / STEP) + 1):
            now = step * STEP
            while pending and pending[0][0] <= now + d.dispatch_ahead_sec + 1:
                due, count = pending.popleft()
                for shard in shards:
                    shard.append([due, count / d.due_shards])
                in_shards += count
            while claims_running and claims_running[0] <= now:
                heapq.heappop(claims_running)
            running -= batches.pop(step, 0.0)
            if step % ticks_every == 0:
                horizon = now + d.dispatch_ahead_sec
                busy = [i for i, shard in enumerate(shards) if shard and shard[0][0] <= horizon]
                # Two minute buckets probed per shard, then the busy ones invoked, both by the
                # ticker's thread pool.
                probing = math.ceil(2 * d.due_shards / self.probe_threads)
                fanout_at = now + probing * calls.dynamodb_latency_ms / 1000
                for order, i in enumerate(busy):
                    start = fanout_at + (order // self.probe_threads + 1) * self.invoke_ms / 1000
                    free = lim.account_concurrency - running - len(claims_running)
                    if claim_busy[i] > start or free < 1:
                        continue
                    taken: list[list[float]] = []
                    while shards[i] and shards[i][0][0] <= horizon:
                        taken.append(shards[i].popleft())
                    items = sum(c for _, c in taken)
                    cold = 0.0
                    if len(claims_running) + 1 > warm_claims:
                        cold = lim.cold_start_ms / 1000
                        warm_claims = len(claims_running) + 1.0
                    sent, done = calls.claim_seconds(math.ceil(items), d)
                    wait = max(
                        table.take(
                            start,
                            items * calls.table_write_units_per_execution * claim_table_share,
                            done,
                        ),
                        due_parts[i].take(start, items * calls.due_write_units_per_item, done),
                        jobs.take(start, items * calls.jobs_write_units_per_execution / 2, done),
                    )
                    sent_at = start + cold + wait + sent
                    sends = calls.send_seconds(math.ceil(items), d)
                    claim_busy[i] = start + cold + wait + done
                    heapq.heappush(claims_running, claim_busy[i])
                    in_shards -= items
                    for due, count in taken:
                        arrives = sent_at + calls.delivery_ms / 1000
                        if d.delay_in_sqs:
                            arrives = max(arrives, math.floor(due))
                        heapq.heappush(inflight, (arrives, due, count))
                        dispatched.add(sent_at - sends, sent_at, count)
                        dispatch_lag.add(sent_at - due, count)
                        if self.load.burst and self.load.burst_at <= due < self.load.burst_at + 60:
                            burst_last = max(burst_last or 0.0, sent_at - self.load.burst_at)
                peak["claimer"] = max(peak["claimer"], float(len(claims_running)))
            while inflight and inflight[0][0] <= now:
                _, due, count = heapq.heappop(inflight)
                queue.append([due, count])
                visible += count
            if visible > 1e-9 and running >= min(esm_cap, d.lane_max_concurrency) - 1e-9:
                esm_cap = min(
                    float(d.lane_max_concurrency), esm_cap + lim.esm_scale_per_minute / 60 * STEP
                )
            worker_fn_cap += lim.function_scale_per_10_sec / 10 * STEP
            cap = min(
                esm_cap,
                float(d.lane_max_concurrency),
                worker_fn_cap,
                lim.account_concurrency - len(claims_running),
            )
            wanted = max(wanted, running + visible / d.batch_size)
            starting = min(max(0.0, cap - running), visible / d.batch_size)
            if fargate is not None:
                starting = 0.0
                visible -= fargate.start(step, queue, visible, (table, open_index, jobs), start_lag)
            if starting > 1e-9:
                take = starting * d.batch_size
                cold = 0.0
                if running + starting > warm_workers:
                    cold = lim.cold_start_ms / 1000
                    warm_workers = running + starting
                wait = max(
                    table.take(
                        now,
                        take * calls.table_write_units_per_execution * (1 - claim_table_share),
                        batch_s,
                    ),
                    open_index.take(
                        now, take * calls.open_index_write_units_per_execution, batch_s
                    ),
                    jobs.take(now, take * calls.jobs_write_units_per_execution / 2, batch_s),
                )
                _take_while_running(during, take, now, calls.job.mean_sec, table, open_index)
                longest = batch_s + slowest_extra
                visible -= take
                while take > 1e-9 and queue:
                    entry = queue[0]
                    part = min(entry[1], take)
                    for offset, share in offsets:
                        # One claimed ahead of its second is held until then.
                        begin = max(now + cold + wait + offset, entry[0])
                        start_lag.add(begin - entry[0], part * share)
                        if entry[0] == flood_due:
                            flood_last = max(flood_last, begin - entry[0])
                            flood_started += part * share
                        else:
                            others_lag.add(begin - entry[0], part * share)
                        longest = max(longest, begin - now + msg_s)
                    entry[1] -= part
                    take -= part
                    if entry[1] <= 1e-9:
                        queue.popleft()
                running += starting
                finish = step + max(1, math.ceil(longest / STEP))
                batches[finish] = batches.get(finish, 0.0) + starting
            if fargate is not None:
                fargate.release(step)
                peak["fargate_slots_busy"] = max(peak.get("fargate_slots_busy", 0.0), fargate.busy)
            peak["worker"] = max(peak["worker"], running)
            peak["total"] = max(peak["total"], running + len(claims_running))
            idle = not (queue or inflight or pending) and in_shards < 1e-6
            if now > self.load.duration_sec and idle:
                break
        busiest = max(due_parts, key=lambda b: b.demand.peak())
        resources = {
            "table (on-demand)": table,
            "open index (all shards)": open_index,
            "jobs (all tenants)": jobs,
            "due partition (busiest)": busiest,
        }
        return SimResult(
            design=d,
            dispatched_per_sec=dispatched.series(),
            dispatch_lag=dispatch_lag.summary(),
            start_lag=start_lag.summary(),
            burst_dispatched_within_sec=None if burst_last is None else round(burst_last, 1),
            peak_concurrency={k: round(v) for k, v in peak.items()},
            concurrency_wanted=round(wanted),
            peak_write_units={name: round(b.demand.peak()) for name, b in resources.items()},
            write_capacity={name: b.rate for name, b in resources.items()},
            throttled={
                name: round(b.delayed, 2) for name, b in resources.items() if b.delayed > STEP
            },
            undispatched=sum(c for shard in shards for _, c in shard) + sum(c for _, c in pending),
            unstarted=sum(c for _, c in queue) + sum(c for _, _, c in inflight),
            others_start_lag=others_lag.summary() if flood_due is not None else None,
            flood_started=round(flood_started),
            flood_started_within_sec=(
                round(flood_last, 1)
                if flood_due is not None
                and not any(e[0] == flood_due for e in queue)
                and not any(due == flood_due for _, due, _ in inflight)
                and not any(e[0] == flood_due for shard in shards for e in shard)
                and not any(due == flood_due for due, _ in pending)
                else None
            ),
        )


class _Fleet:
    """Fargate tasks serving the lane: `tasks * slots` calls at once, each slot held for its own
    call (a long call holds one slot, not a whole batch's invocation), and messages started no
    faster than the tasks' vCPU runs their lease and completion."""

    def __init__(self, design: Design, calls: CallProfile) -> None:
        self.slots = float(design.fargate_tasks * design.fargate_slots)
        self.busy = 0.0
        self._frees: dict[int, float] = {}
        cpu_sec = calls.worker_cpu_ms_per_message / 1000
        cpu_bound = design.fargate_tasks * design.fargate_vcpu / cpu_sec if cpu_sec else math.inf
        self._starts_per_step = cpu_bound * STEP
        # Receive, lease (its DynamoDB calls) and the CPU before the call starts.
        self._before_call = (
            calls.sqs_latency_ms / 1000
            + (calls.worker_calls_per_message * calls.dynamodb_latency_ms / 1000) / 2
            + cpu_sec / design.fargate_vcpu
        )
        self._after_call = (calls.worker_calls_per_message * calls.dynamodb_latency_ms / 1000) / 2
        self._groups = calls.job.groups()
        self._during = calls.duration_write_units_by_table
        self._calls = calls

    def start(
        self,
        step: int,
        queue: deque[list[float]],
        visible: float,
        buckets: tuple[_Bucket, _Bucket, _Bucket],
        start_lag: _Histogram,
    ) -> float:
        """Start what free slots and the CPU allow from the queue; returns how many started."""
        now = step * STEP
        take = min(max(0.0, self.slots - self.busy), visible, self._starts_per_step)
        if take <= 1e-9:
            return 0.0
        table, open_index, jobs = buckets
        calls = self._calls
        mean = calls.job.mean_sec
        wait = max(
            table.take(now, take * calls.table_write_units_per_execution * (2 / 3), mean),
            open_index.take(now, take * calls.open_index_write_units_per_execution, mean),
            jobs.take(now, take * calls.jobs_write_units_per_execution / 2, mean),
        )
        _take_while_running(self._during, take, now, mean, table, open_index)
        started = take
        while take > 1e-9 and queue:
            entry = queue[0]
            part = min(entry[1], take)
            begin = max(now + wait + self._before_call, entry[0])
            start_lag.add(begin - entry[0], part)
            for duration, share in self._groups:
                end = begin + duration + self._after_call
                key = max(step + 1, math.ceil(end / STEP))
                self._frees[key] = self._frees.get(key, 0.0) + part * share
            entry[1] -= part
            take -= part
            if entry[1] <= 1e-9:
                queue.popleft()
        self.busy += started - take
        return started - take

    def release(self, step: int) -> None:
        self.busy = max(0.0, self.busy - self._frees.pop(step, 0.0))


def _start_offsets(
    batch_size: int, at_once: int, msg_s: float, cpu_s: float, groups: int = 10
) -> list[tuple[float, float]]:
    """When a batch's messages start after the batch does, as (offset, share of the batch).

    Messages run `at_once` at a time, each round after the one before it, and each message of a
    round a message's CPU after the one before it (they share the invocation's vCPU share). A
    large batch's positions are pooled into at most `groups` (their mean offset), so a batch of
    100 costs the walk no more than one of 10.
    """
    starts = sorted((pos // at_once) * msg_s + (pos % at_once) * cpu_s for pos in range(batch_size))
    size = -(-batch_size // groups)
    pooled = [starts[i : i + size] for i in range(0, batch_size, size)]
    return [(sum(group) / len(group), len(group) / batch_size) for group in pooled]
