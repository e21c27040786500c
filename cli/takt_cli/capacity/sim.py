"""A discrete-event simulation of deployed takt, to size it before launch.

The simulated system is the design as it ships: a ticker each whole second probes the due
index's partitions (`_DueIndex`: a hot minute split into N*k sub-partitions when its items were
written, the next minute's first second swept from `burst_ahead_sec` before it) with the
claimer's thread count, and invokes one claimer per busy partition, within the claimer's
reserved concurrency; a claimer dispatches everything due within its horizon in its partition
(`dispatch_ahead_sec`, or the minute's first second when claimed ahead), writing item by item
(`claim_parallelism` at a time), and sends the messages once every execution is written, one
claimed for a second still to come delayed by SQS to it; the lane's SQS event source mapping
hands batches to worker invocations, which run a batch's messages `batch_concurrency` at a time
(all at once as shipped; each a message's CPU after the one before it, as they share the
invocation's vCPU) and hold a message claimed early until its second; or Fargate tasks serve
the lane, each slot one call, each message deleted once its lease is held.

Events fall on a 50 ms grid (ticks, claim starts and ends, batch starts and ends, scaling
steps); executions move as cohorts (a count due at one instant), so a million executions are a
few thousand events. AWS's limits act where they do in AWS: account concurrency shared by every
function, each function's +1,000 instances per 10 s, the event source's +300 concurrent batches
a minute up to the lane's maximum, cold starts for instances beyond the warm pool, a standard
queue's in-flight messages (received, not deleted), and write throughput per DynamoDB partition
(the due index's partitions, the `open` index's `open_shards` partitions, the jobs table's
tenants) and per on-demand table (twice its previous peak). A resource asked for more than it
serves makes the work that needs it wait (throttling with retries), which is how it surfaces as
lag.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from takt.dispatch.ticker import BURST_EVERY_SEC, SPLIT_SWEEP_EVERY_SEC, claim_order
from takt_cli.capacity.model import CallProfile, Design, Limits

STEP = 0.05
BIN_MS = 10
# A flood's due instant is moved by this much so its cohort stays apart from the steady load's
# cohort of the same slice all the way to the worker (the noisy-neighbour scenario).
FLOOD_MARK = 1e-7
# Due keys are in milliseconds: a claim of a minute's first second takes up to its last one.
BURST_LAST_MS = 1


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

    def minute_start(self, t: float) -> float:
        """The start of the minute bucket `t` falls in: minutes begin at `burst_at`, as the
        hour's first minute begins at its burst."""
        return self.burst_at + 60 * math.floor((t - self.burst_at) / 60)

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
    # The most messages the lane's queue held received and not yet deleted.
    peak_sqs_in_flight: float = 0.0


@dataclass
class _Minute:
    """One minute bucket of the due index: its cohorts in due order, which each of its
    partitions holds a share of (a job's partition is a hash of its id: even over a minute's N
    shards, uneven over a split minute's N*k, whose base shards keep what was written before it
    split, `Design.partition_shares`), and how far each partition is claimed (the index of its
    first cohort not yet taken)."""

    start: float
    dues: list[float]
    prefix: list[float]
    parts: int
    claimed: list[int]
    busy_until: list[float]
    # The share of every cohort each partition holds.
    shares: list[float]
    # Partitions the last sweep for the minute's first second found something in (the ticker's
    # `_early`): swept again on every tick until empty.
    early: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, start: float, cohorts: list[tuple[float, float]], design: Design) -> _Minute:
        prefix = [0.0]
        for _, count in cohorts:
            prefix.append(prefix[-1] + count)
        shares = design.partition_shares(prefix[-1])
        parts = len(shares)
        dues = [due for due, _ in cohorts]
        return cls(start, dues, prefix, parts, [0] * parts, [0.0] * parts, shares)

    def busy(self, until: float, among: Iterable[int] | None = None) -> list[int]:
        """The partitions holding something due by `until`, among `among` (all by default)."""
        end = bisect.bisect_right(self.dues, until)
        chosen = range(self.parts) if among is None else sorted(among)
        return [p for p in chosen if self.claimed[p] < end]

    def take(self, part: int, until: float) -> tuple[int, int]:
        """Claim `part`'s share of the cohorts due by `until`: the range of cohorts taken."""
        first, end = self.claimed[part], bisect.bisect_right(self.dues, until)
        self.claimed[part] = max(first, end)
        return first, end

    def items(self, part: int, first: int, end: int) -> float:
        """Partition `part`'s share of the cohorts `first` to `end`."""
        return (self.prefix[end] - self.prefix[first]) * self.shares[part]

    def share(self, part: int, index: int) -> float:
        return (self.prefix[index + 1] - self.prefix[index]) * self.shares[part]

    def left(self) -> float:
        total = self.prefix[-1]
        return sum(
            (total - self.prefix[i]) * share
            for i, share in zip(self.claimed, self.shares, strict=True)
        )

    def holds(self, due: float) -> bool:
        """Whether some partition has not yet claimed its share of the cohort due at `due`."""
        index = bisect.bisect_left(self.dues, due)
        return any(i <= index for i in self.claimed)


class _DueIndex:
    """The due index as the ticker sweeps it (takt.dispatch.ticker): minute buckets of N
    partitions, a hot one of N*k (`Design.partitions_of`, decided from the minute's count when
    its items are written).

    Each second the ticker probes the N base shards of the previous and current minutes (and of
    the next once the dispatch horizon reaches it), and from `burst_ahead_sec` before a minute
    its base shards too, for the minute's first second: all of them every `BURST_EVERY_SEC`, and
    on every tick those the last sweep found something in. A split minute's sub-partitions are
    each probed on their own every `SPLIT_SWEEP_EVERY_SEC`; on the other ticks, once the minute
    was found busy, a busy base shard's sub-partitions are claimed beside it, unprobed, each by
    a claimer of its own (an empty one's claim finds nothing).
    """

    def __init__(self, load: Load, design: Design) -> None:
        self.design = design
        self._load = load
        by_minute: dict[float, list[tuple[float, float]]] = {}
        for due, count in load.cohorts():
            if count > 0:
                by_minute.setdefault(load.minute_start(due), []).append((due, count))
        self.minutes = {
            start: _Minute.of(start, cohorts, design) for start, cohorts in by_minute.items()
        }
        self._open = sorted(self.minutes)
        self._busy_before: set[float] = set()
        self.left = sum(m.prefix[-1] for m in self.minutes.values())

    def sweep(self, now: float) -> tuple[int, list[tuple[_Minute, int, float]]]:
        """(partitions probed, the partitions claimed with the latest due time their claim
        takes), in the ticker's order (minute, then partition)."""
        d = self.design
        n = d.due_shards
        horizon = now + d.dispatch_ahead_sec
        current = self._load.minute_start(now)
        second = round(now - current)
        upcoming = current + 60
        self._open = [start for start in self._open if self.minutes[start].left() > 1e-9]
        # The swept minutes with nothing left are probed all the same; the others below.
        swept = {current - 60, current} | ({upcoming} if horizon >= upcoming else set())
        probed = n * len(swept - set(self._open))
        claims: list[tuple[_Minute, int, float]] = []
        busy_now: set[float] = set()
        for start in self._open:
            minute = self.minutes[start]
            if start <= horizon:
                until, bases = horizon, None
            elif start == upcoming and d.burst_ahead_sec and now >= start - d.burst_ahead_sec:
                until = start + 1 - BURST_LAST_MS / 1000
                bases = None if second % BURST_EVERY_SEC == 0 else minute.early
            else:
                continue
            found = minute.busy(until, range(n) if bases is None else bases)
            probed += n if bases is None else len(bases)
            if start > horizon:
                minute.early = set(found)
            split = minute.parts > n
            if split and second % SPLIT_SWEEP_EVERY_SEC == 0:
                probed += minute.parts - n
                chosen = minute.busy(until)
            elif split and start in self._busy_before:
                chosen = sorted(b + n * j for b in found for j in range(minute.parts // n))
            else:
                chosen = found
            if chosen:
                busy_now.add(start)
            claims.extend((minute, p, until) for p in chosen)
        self._busy_before = busy_now
        return probed, claims


class Simulator:
    def __init__(
        self,
        load: Load,
        design: Design,
        limits: Limits | None = None,
        calls: CallProfile | None = None,
        *,
        warm_rate: float | None = None,
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
        self.invoke_ms = invoke_ms
        self.drain_sec = drain_sec

    def run(self) -> SimResult:  # noqa: PLR0915 - one walk over the grid, step by step
        d, lim, calls = self.design, self.limits, self.calls
        index = _DueIndex(self.load, d)
        claims_running: list[float] = []
        # Messages sent but not yet receivable, by the grid step they become receivable at
        # (due -> count), and the receivable ones ([due, count], oldest first).
        arriving: dict[int, dict[float, float]] = {}
        queue: deque[list[float]] = deque()
        visible = 0.0
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
        fargate = _Fleet(d, calls, lim) if d.fargate_tasks else None
        # Instances stay warm for minutes: a cold start is paid only beyond the most that ran.
        warm_workers = self.warm_rate / d.batch_size * (batch_s + d.dispatch_ahead_sec)
        warm_claims = float(min(d.due_shards, max(1.0, self.warm_rate / 50)))
        esm_cap = max(float(lim.esm_initial_concurrency), min(warm_workers, d.lane_max_concurrency))
        worker_fn_cap = max(warm_workers, float(lim.function_scale_per_10_sec))
        running = 0.0
        peak = {"worker": 0.0, "claimer": 0.0, "total": 0.0}
        wanted = in_flight = 0.0
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
        due_parts: dict[tuple[float, int], _Bucket] = {}
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
        load = self.load
        ticks_every = round(1 / STEP)
        # The ticker probes and invokes with the claimer's thread count (takt.wiring.scheduler).
        threads = d.claim_parallelism
        for step in range(int((load.duration_sec + self.drain_sec) / STEP) + 1):
            now = step * STEP
            while claims_running and claims_running[0] <= now:
                heapq.heappop(claims_running)
            running -= batches.pop(step, 0.0)
            if step % ticks_every == 0:
                probed, swept = index.sweep(now)
                # Started in the ticker's order: shuffled each tick, so no partition is always
                # last to a free claimer.
                busy = claim_order(swept, step // ticks_every)
                # The busy partitions' claimers invoked after every probe, both by the ticker's
                # thread pool.
                fanout_at = now + math.ceil(probed / threads) * calls.dynamodb_latency_ms / 1000
                for order, (minute, shard, until) in enumerate(busy):
                    start = fanout_at + (order // threads + 1) * self.invoke_ms / 1000
                    while claims_running and claims_running[0] <= start:
                        heapq.heappop(claims_running)
                    free = lim.account_concurrency - running - len(claims_running)
                    if (
                        minute.busy_until[shard] > start
                        or free < 1
                        or len(claims_running) >= d.claimer_concurrency
                    ):
                        continue
                    first, end = minute.take(shard, until)
                    items = minute.items(shard, first, end)
                    cold = 0.0
                    if len(claims_running) + 1 > warm_claims:
                        cold = lim.cold_start_ms / 1000
                        warm_claims = len(claims_running) + 1.0
                    sent, done = calls.claim_seconds(math.ceil(items), d)
                    partition = due_parts.setdefault(
                        (minute.start, shard), _Bucket(lim.partition_write_units_per_sec)
                    )
                    wait = max(
                        table.take(
                            start,
                            items * calls.table_write_units_per_execution * claim_table_share,
                            done,
                        ),
                        partition.take(start, items * calls.due_write_units_per_item, done),
                        jobs.take(start, items * calls.jobs_write_units_per_execution / 2, done),
                    )
                    sent_at = start + cold + wait + sent
                    minute.busy_until[shard] = start + cold + wait + done
                    heapq.heappush(claims_running, minute.busy_until[shard])
                    peak["claimer"] = max(peak["claimer"], float(len(claims_running)))
                    index.left -= items
                    sends = calls.send_seconds(math.ceil(items), d)
                    dispatched.add(sent_at - sends, sent_at, items)
                    for i in range(first, end):
                        due, count = minute.dues[i], minute.share(shard, i)
                        arrives = sent_at + calls.delivery_ms / 1000
                        if due - sent_at >= 1:
                            # Claimed for the minute's first second: SQS delays the message by
                            # the whole seconds left (takt.dispatch.claimer._delayed).
                            arrives += math.floor(due - sent_at)
                        key = math.ceil(arrives / STEP - 1e-9)
                        slot = arriving.setdefault(key, {})
                        slot[due] = slot.get(due, 0.0) + count
                        dispatch_lag.add(sent_at - due, count)
                    if (
                        load.burst
                        and end > first
                        and minute.dues[first] < load.burst_at + 60
                        and minute.dues[end - 1] >= load.burst_at
                    ):
                        burst_last = max(burst_last or 0.0, sent_at - load.burst_at)
            for due, count in sorted(arriving.pop(step, {}).items()):
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
                # A batch's messages stay in flight until its invocation ends.
                lim.sqs_in_flight_per_queue / d.batch_size,
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
                in_flight = max(in_flight, fargate.held)
            else:
                in_flight = max(in_flight, running * d.batch_size)
            peak["worker"] = max(peak["worker"], running)
            peak["total"] = max(peak["total"], running + len(claims_running))
            idle = not (queue or arriving) and index.left < 1e-6
            if now > load.duration_sec and idle:
                break
        busiest = max(
            due_parts.values(),
            key=lambda b: b.demand.peak(),
            default=_Bucket(lim.partition_write_units_per_sec),
        )
        resources = {
            "table (on-demand)": table,
            "open index (all shards)": open_index,
            "jobs (all tenants)": jobs,
            "due partition (busiest)": busiest,
        }
        unstarted = sum(c for _, c in queue) + sum(
            c for slot in arriving.values() for c in slot.values()
        )
        flood_pending = flood_due is not None and (
            any(e[0] == flood_due for e in queue)
            or any(flood_due in slot for slot in arriving.values())
            or index.minutes[load.minute_start(flood_due)].holds(flood_due)
        )
        return SimResult(
            design=d,
            dispatched_per_sec=dispatched.series(),
            dispatch_lag=dispatch_lag.summary(),
            start_lag=start_lag.summary(),
            burst_dispatched_within_sec=None if burst_last is None else round(burst_last, 1),
            peak_concurrency={k: round(v) for k, v in peak.items()},
            concurrency_wanted=round(wanted),
            peak_sqs_in_flight=round(in_flight),
            peak_write_units={name: round(b.demand.peak()) for name, b in resources.items()},
            write_capacity={name: b.rate for name, b in resources.items()},
            throttled={
                name: round(b.delayed, 2) for name, b in resources.items() if b.delayed > STEP
            },
            undispatched=sum(m.left() for m in index.minutes.values()),
            unstarted=unstarted,
            others_start_lag=others_lag.summary() if flood_due is not None else None,
            flood_started=round(flood_started),
            flood_started_within_sec=(
                round(flood_last, 1) if flood_due is not None and not flood_pending else None
            ),
        )


class _Fleet:
    """Fargate tasks serving the lane: `tasks * slots` calls at once, each slot held for its own
    call (a long call holds one slot, not a whole batch's invocation), and messages started no
    faster than the tasks' vCPU runs their lease and completion. A received message stays in
    flight until the worker deletes it, at the lease (`fargate_deletes_at_lease`) or after the
    call (a message claimed ahead is released before its hold), and the queue hands out none
    beyond its in-flight limit."""

    def __init__(self, design: Design, calls: CallProfile, limits: Limits) -> None:
        self.slots = float(design.fargate_tasks * design.fargate_slots)
        self.busy = 0.0
        self._frees: dict[int, float] = {}
        # Messages received and not yet deleted, and when those deleted at the lease are.
        self.held = 0.0
        self._deletes: dict[int, float] | None = {} if design.fargate_deletes_at_lease else None
        self._in_flight_limit = float(limits.sqs_in_flight_per_queue)
        cpu_sec = calls.fargate_cpu_ms_per_execution / 1000
        cpu_bound = design.fargate_tasks * design.fargate_vcpu / cpu_sec if cpu_sec else math.inf
        self._starts_per_step = cpu_bound * STEP
        # Receive, lease (its DynamoDB calls) and the CPU before the call starts.
        self._before_call = (
            calls.sqs_latency_ms / 1000
            + (calls.worker_calls_per_message * calls.dynamodb_latency_ms / 1000) / 2
            + cpu_sec / design.fargate_vcpu
        )
        self._after_call = (calls.worker_calls_per_message * calls.dynamodb_latency_ms / 1000) / 2
        self._receive = calls.sqs_latency_ms / 1000
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
        take = min(
            max(0.0, self.slots - self.busy),
            visible,
            self._starts_per_step,
            max(0.0, self._in_flight_limit - self.held),
        )
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
            if self._deletes is not None:
                # Released at the lease, or before the hold of a message claimed ahead of its
                # time (takt.worker.runner): then just after its receive.
                ready = now + wait + self._before_call
                released = begin if begin <= ready else now + self._receive
                key = max(step + 1, math.ceil(released / STEP))
                self._deletes[key] = self._deletes.get(key, 0.0) + part
            for duration, share in self._groups:
                end = begin + duration + self._after_call
                key = max(step + 1, math.ceil(end / STEP))
                self._frees[key] = self._frees.get(key, 0.0) + part * share
            entry[1] -= part
            take -= part
            if entry[1] <= 1e-9:
                queue.popleft()
        self.busy += started - take
        self.held += started - take
        return started - take

    def release(self, step: int) -> None:
        ended = self._frees.pop(step, 0.0)
        self.busy = max(0.0, self.busy - ended)
        deleted = ended if self._deletes is None else self._deletes.pop(step, 0.0)
        self.held = max(0.0, self.held - deleted)


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
