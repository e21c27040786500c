"""The inputs of the capacity simulator: AWS's limits, takt's design knobs, and what one
execution costs in calls and capacity units (from the meter).

Every default is either AWS's published number (the limits) or takt's shipped setting (the
design), so a scenario run with defaults says what a fresh deployment in a default account does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

from takt.config import Settings
from takt.executions.rules import lease_moves_check_at
from takt.store.due import split_of
from takt_cli.capacity.billing import units_by_table
from takt_cli.capacity.cost import ONE_VCPU_MB
from takt_cli.capacity.prices import US_EAST_1, Prices


@dataclass(frozen=True)
class Limits:
    """AWS's limits and scaling rules, as published (us-east-1, a default account)."""

    partition_write_units_per_sec: float = 1000.0
    partition_read_units_per_sec: float = 3000.0
    # An on-demand table serves twice its previous peak at once; a new one 4,000 WCU/12,000 RCU.
    new_table_write_units_per_sec: float = 4000.0
    new_table_read_units_per_sec: float = 12000.0
    # The per-table quota on an on-demand table's throughput (a Service Quotas value).
    table_max_write_units_per_sec: float = 40000.0
    account_concurrency: int = 1000
    # Each function may add 1,000 concurrent instances every 10 seconds.
    function_scale_per_10_sec: int = 1000
    # An SQS event source mapping adds up to 300 concurrent invocations a minute, from 5.
    esm_scale_per_minute: int = 300
    esm_initial_concurrency: int = 5
    api_requests_per_sec: float = 10000.0
    cold_start_ms: float = 800.0
    # Messages a standard queue holds received and not yet deleted; a receive beyond it gets
    # nothing until some are deleted.
    sqs_in_flight_per_queue: int = 120_000


def _shipped(setting: str) -> float:
    """A timing as takt ships it (`takt.config.Settings`), so the model follows the runtime's
    defaults rather than a copy of them."""
    return float(Settings.model_fields[setting].default)


# The watchdog function sweeps six times, `watchdogIntervalSec` apart (functions/watchdog).
WATCHDOG_SWEEPS = 6
# One sweep of an idle open index, with the invocation around it (an estimate).
ONE_SWEEP_SEC = 1


def watchdog_busy_sec(sweeps: int, interval_sec: float) -> float:
    """How much of each minute the watchdog's invocation runs: its sweeps `interval_sec` apart
    (at least one sweep's time, at most the minute). `takt cost idle` and the simulator's hourly
    cost both price it so."""
    return min(max((sweeps - 1) * interval_sec, ONE_SWEEP_SEC), 60)


def watchdog_found_after(interval_sec: float) -> float:
    """How long after a running execution's `check_at` the watchdog finds it, on average: the
    clock margin it waits past the time, then half a sweep interval."""
    return _shipped("clock_margin_sec") + interval_sec / 2


@dataclass(frozen=True)
class Design:
    """takt's knobs that the simulation varies (defaults: the seed profile's, which
    `takt_cli.capacity.profiles` reads; tests/unit/capacity/test_capacity_profiles.py holds the
    two equal)."""

    due_shards: int = 64
    # A minute whose count exceeds `due_shards * due_split_items` is written over
    # `due_shards * k` partitions, k the smallest power of two that brings it within, at most
    # `due_split_max` (the profile's `dueSplitItems` and `dueSplitMax`; `split_of`).
    due_split_items: int = 2000
    due_split_max: int = 16
    # The profile's `openShards`: each execution enters and leaves the `open` index (two writes), so
    # 64 partitions take the seed's :00 burst.
    open_shards: int = 64
    # What a claim takes ahead of its second (the worker holds it until then), and from how long
    # before a minute the ticker claims the minute's first second, each message delayed by SQS
    # to its second (takt.dispatch.claimer.claim_horizon): the runtime's defaults, which no
    # profile sets.
    dispatch_ahead_sec: float = _shipped("dispatch_ahead_sec")
    burst_ahead_sec: float = _shipped("burst_ahead_sec")
    # Writes one claim keeps in flight at once, each phase's (the profile's `claimerThreads`).
    claim_parallelism: int = 32
    # The claimer function's reserved concurrency (the profile's `claimerConcurrency`): claims
    # running at once, every partition's together.
    claimer_concurrency: int = 384
    # The SQS event source's maximum concurrency for the lane (the seed's default lane: 333).
    lane_max_concurrency: int = 333
    # The default lane's batch (`lanes.default.batchSize`; 10 before 2026-12-01).
    batch_size: int = 100
    # How many of a batch's messages a worker invocation runs at once
    # (`TAKT_WORKER_BATCH_CONCURRENCY`, takt.worker.batch); 1 before 2026-12-01, when a batch's
    # messages ran one after another.
    batch_concurrency: int = 100
    # Jobs spread over this many tenants; the jobs table's partition key is the tenant.
    tenants: int = 1000
    # One vCPU (infra/functions.py): a claim is CPU-bound.
    claimer_memory_mb: int = 1769
    worker_memory_mb: int = 1024
    # Fargate workers (`takt worker`, the profile's `fargateWorker`) serving the lane instead of the
    # worker function: 0 tasks means the function. Tasks are there from the start (scaled ahead
    # of the due index, takt.dispatch.ahead); each runs `fargate_slots` calls at once and shares
    # `fargate_vcpu` between their CPU.
    fargate_tasks: int = 0
    fargate_slots: int = 320
    fargate_vcpu: float = 0.5
    fargate_memory_gb: float = 1.0
    # How the tasks reach targets and the AWS APIs (the profile's `fargateEgress`): each its own
    # public IPv4 address (False, the profiles' default), or one NAT gateway (True), billed by the
    # hour and by the GB it carries.
    fargate_nat_gateway: bool = False
    # `takt worker` deletes a lane message once it holds the execution's lease (or before the
    # hold of a message claimed ahead of its time), so the message counts against the queue's
    # in-flight limit only from its receive to then; False models the worker that deleted it
    # after the call.
    fargate_deletes_at_lease: bool = True

    def partitions_of(self, count: float) -> int:
        """The due index's partitions of a minute holding `count` items: `due_shards`, or for
        a hot minute `due_shards * k`, k the smallest power of two that leaves no partition
        more than `due_split_items`, at most `due_split_max` (decided when the items are
        written, so each sub-partition is claimed by a claim of its own)."""
        return self.due_shards * split_of(
            math.ceil(count), self.due_shards, self.due_split_items, self.due_split_max
        )

    def partition_shares(self, count: float) -> list[float]:
        """The share of a minute's `count` items each of its `partitions_of(count)` partitions
        holds, the minute's items written one after another (takt.store.due): the items written
        while its split was k are spread over its first N*k partitions, and k only grows, so the
        base shards keep what was written before the minute split and the last sub-partitions
        hold only what came after. The seed's million at N = 64: 4,953 items in each base shard
        and 953 in each of the last 256, where `bench/due_split.py` (the shipped hashing and its
        stale splits) gives 915 to 5,000; evenly, 1,953 each."""
        parts = self.partitions_of(count)
        if count <= 0 or parts == self.due_shards:
            return [1.0 / parts] * parts
        per_part = [0.0] * parts
        written = 0.0
        k = 1
        while written < count:
            # The last split takes the rest (at the cap, everything beyond its bound).
            bound = count if self.due_shards * k >= parts else self.boundary(k)
            spread = (min(count, bound) - written) / (self.due_shards * k)
            for part in range(self.due_shards * k):
                per_part[part] += spread
            written = min(count, bound)
            k *= 2
        return [items / count for items in per_part]

    def boundary(self, split: int) -> float:
        """The most items a minute holds while its split is `split` (`split_of`)."""
        return float(self.due_shards * self.due_split_items * split)

    @property
    def batch_waves(self) -> int:
        """How many rounds of calls a full batch takes: one when its messages run at once."""
        return -(-self.batch_size // max(1, self.batch_concurrency))


# The minutes' count writes a due write makes at split 1 (`CallProfile`), measured on
# 2026-12-05 18:59-19:00 UTC at 867a2d1 (load average 7-8; units do not depend on it) by
#     .venv/bin/takt bench local --stored 0 --recurring 100 --every 5 --for 30
# (600 executions, history ok) from its metered units per execution: the claimer's due
# UpdateItem, 0.05 (the count writes, 30: the claimer writes nothing else to the due table
# with UpdateItem), over its due BatchWriteItem, 0.8333 (each fired job's next due item, one
# unit each: 500). The design's rate is one in 16 (0.0625); 30 of 500 is within the sample's
# error of it (tests/unit/capacity/test_capacity_minute_counts.py).
COUNT_DUE_WRITES = 500
COUNT_WRITE_UNITS_PER_DUE_WRITE = 30 / COUNT_DUE_WRITES


@dataclass(frozen=True)
class CallProfile:
    """One execution's calls and units, per function, and the latencies to price them in time.

    The units are what a run whose target answers at once writes and reads (below, with the
    command that measured them); a call that takes seconds adds its lease's heartbeats and the
    watchdog's rechecks, which `write_units_by_table` and `read_units_by_table` add from the
    job's duration (`target_latency_ms`, `target_latency_sigma`).
    """

    claimer_writes_per_item: float = 3.0
    # The claimer alone (moto in another process), recurring and one-off items alike, measured
    # on 2026-12-05 16:16-16:21 UTC at 05e1715 (load average 9.4-14.5) by
    #     .venv/bin/python bench/claim_cpu.py --items 300 --rounds 2
    # 3.23/3.34 ms one-off, 3.21/3.19 recurring; 7.7 before, metered by `takt bench local`,
    # which counted its meter's own work per call (docs/CAPACITY.md, "The claimer's CPU").
    claimer_cpu_ms_per_item: float = 3.2
    # The same with the execution left to its lease (`record_at_lease`): one write fewer an
    # item. Side by side on 2026-12-06 00:46-00:47 UTC (load average 1.2-2.0) by
    #     TAKT_RECORD_AT_LEASE=false|true .venv/bin/python bench/claim_cpu.py --items 300 \
    #         --rounds 2
    # 3.80/3.74 ms (one-off/recurring, 3.12/3.24 calls an item) against 2.50/2.50 ms (2.12/2.23
    # calls): the ratio 0.66 applied to the figure above.
    claimer_cpu_ms_per_item_at_lease: float = 2.1
    claimer_overhead_calls: float = 2.0
    worker_calls_per_message: float = 3.0
    worker_cpu_ms_per_message: float = 9.6
    # The Fargate worker's CPU per execution: all of a `takt worker` process's (lease, the
    # call's thread, heartbeats, completion, receives and deletes) with 10 s calls to an HTTP
    # target, the most of the slot counts measured side by side (it does not grow with them;
    # docs/WORKERS.md, "How many slots a worker carries") by
    #     .venv/bin/python bench/worker_slots.py --slots 256,400,600,800 --call-sec 10
    # on 2026-12-05 19:13-19:37 UTC (load average 6.7-13.9): 9.49, 8.54, 9.04 and 9.53 ms, and
    # `--slots 320,400` at 19:38-19:46 UTC (4.6-18.0): 8.94 and 7.49 ms.
    fargate_cpu_ms_per_execution: float = 9.5
    # What one execution writes and reads by table and index with a target that answers at
    # once (no heartbeat, no watchdog recheck). THE place these numbers live: replace them when
    # the write path changes. Measured on main at 93444bb (the claim's watch lists) on
    # 2026-12-01 23:52 UTC (load average 4.9; units do not depend on it) by
    #     .venv/bin/takt bench local --stored 0 --recurring 10 --every 5 --for 30
    # (60 executions of recurring jobs, the seed's kind; history ok): 7.97 write units. The
    # executions table 3 (the claim's create, the worker's lease and completion); its `open`
    # index 0 (a claim's executions stay out of it); jobs 1.17 (the claim's advance, and the
    # worker's outcome note on a job's first run: 1 in 6 here); due 1.83 (the fired item's
    # delete, the next item's put for 5 runs in 6) and the watch lists' 1.97 (below). One-off
    # jobs (`--stored 0 --burst 20`, 23:51 UTC) write 5.4 (jobs 1, due 1 and the watch lists'
    # 0.4). The reads are a run at the seed's claims, ten items a claim or more, each job's
    # occurrence claimed ahead on its own (where the small run's claims of one or two items
    # paid the due query's half unit alone: 0.93), measured on 2026-12-05 18:44 UTC at
    # 79659aa (load average 6.0-9.2; units do not depend on it) by
    #     .venv/bin/takt bench local --stored 0 --recurring 100 --every 10 --for 40 --shards 1
    # (400 executions kept up with, 10.2/s; history ok): 3.61 read units. Jobs 3 (the claim's
    # consistent read, the worker's lease-time check and its read after its success),
    # due 0.084 (the claim's consistent query, 0.0825, one unit per 4 KB of items it reads, and
    # the minutes' counts, 0.0013), tenants 10 reads in the 400 runs (the tenant's signing-key
    # state, kept a minute by each process: takt.tenants.webhook_keys) and the watch check's 0.5.
    # docs/CAPACITY.md, "The reads of an execution", says which guarantee each rests on.
    table_write_units_per_execution: float = 3.0
    # The executions table's units when the claim leaves the record to the lease that starts
    # it (`recordAtLease`, the seed and tenx profiles; `record_at_lease` below): the lease's
    # conditional put and the completion. Measured on 2026-12-06 00:21 UTC (load average 1.8;
    # units do not depend on it) by
    #     TAKT_RECORD_AT_LEASE=true .venv/bin/takt bench local --stored 0 --recurring 100 \
    #         --every 10 --for 40 --shards 1
    # (400 executions, 10.2/s, history ok): executions PutItem 1.0 and UpdateItem 1.0, the
    # claim's none; the other tables and the reads (3.63) as in the run above.
    lease_written_table_write_units_per_execution: float = 2.0
    # Whether the claim leaves the record to the lease (the profile's `recordAtLease`,
    # `takt_cli.capacity.profiles.Profile.timed`): the executions table's units above, and a
    # claim whose messages go out without its create phase first (`claim_seconds`).
    record_at_lease: bool = False
    # Whether a claim passes the due items it fired with its partition's cursor rather than
    # deleting each (the profile's `dueCursor`, `takt_cli.capacity.profiles.Profile.timed`):
    # the fired item's delete, one unit of `due_write_units_per_item`, is gone; the claim
    # writes its partition's cursor instead (one unit a claim) and reads its late items with
    # the cursor (one more consistent query a claim), both shared by the claim's items
    # (`items_per_claim`). Measured side by side on 2026-12-06 03:21-03:24 UTC (load average
    # 2.0-3.2; units do not depend on it) by
    #     TAKT_RECORD_AT_LEASE=true TAKT_DUE_CURSOR=false|true TAKT_DUE_LATE_MARGIN_SEC=6 \
    #         TAKT_BURST_AHEAD_SEC=0 .venv/bin/takt bench local --stored 0 --recurring 100 \
    #         --every 10 --for 40 --shards 1
    # (400 executions each, history ok; a 6 s margin so the jobs' next items, 10 s ahead, are
    # written ahead of it): the due table's DeleteItem units 1.0 -> 0.11 an execution (what
    # is left is the jobs' first items, written at their creation within the margin: late
    # items), its UpdateItem 0.025 -> 0.1375 (the cursor's write, 0.1125, at this run's claims
    # of about 9 items) and its Query read units 0.1 -> 0.195; all write units 5.225 -> 4.4475.
    due_cursor: bool = False
    fired_delete_write_units_per_item: float = 1.0
    cursor_write_units_per_claim: float = 1.0
    cursor_read_units_per_claim: float = 1.0
    # The items a claim takes, over which its cursor's write and read are shared: 1 unless a
    # scenario sets its steady claims' (`with_claim_items`: `claim_items`).
    items_per_claim: float = 1.0
    # The claimer's CPU an item with the cursor as well as the record at the lease. Side by
    # side on 2026-12-06 03:28-03:30 UTC (load average 2.6-5.1) by
    #     TAKT_RECORD_AT_LEASE=true TAKT_DUE_CURSOR=false|true TAKT_DUE_LATE_MARGIN_SEC=35 \
    #         TAKT_BURST_AHEAD_SEC=0 .venv/bin/python bench/claim_cpu.py --items 300 --rounds 3
    # twice each way: 2.62/2.70 and 2.66/2.67 ms an item (one-off/recurring; 2.12/2.24 calls)
    # against 1.47/1.62 and 1.66/1.87 ms (1.12/1.25 calls), and on a quiet machine at 04:32 UTC
    # (load average 1.4-1.9) 2.44/2.69 against 1.53/1.95 ms: the ratio of the three pairs'
    # sums, 0.64, applied to the figure at the lease above.
    claimer_cpu_ms_per_item_cursor: float = 1.35
    open_index_write_units_per_execution: float = 0.0
    jobs_write_units_per_execution: float = 1.17
    due_write_units_per_item: float = 1.83
    measured_read_units_by_table: Mapping[str, float] = field(
        default_factory=lambda: {"jobs": 3.0, "due": 0.084, "tenants": 10 / 400}
    )
    # The claims' watch lists (takt.store.watches): a claim puts one item in the due table
    # listing its executions (about 100 bytes each) and the watchdog deletes it after reading
    # them, eventually consistent, at the resend wait. Writes per execution fall with the
    # claim's size: 1.97 in the recurring run above (claims of about 1), 0.4 in the burst run
    # (claims of 5), 0.1 at the seed's density (claims of about 20: `takt bench local --stored
    # 0 --recurring 100 --every 5 --for 30 --shards 1`, due 1.05 against 0.95 before the watch
    # lists; docs/CAPACITY.md, "Step 2"), which is taken.
    watch_due_write_units_per_execution: float = 0.1
    watch_executions_read_units_per_execution: float = 0.5
    # The minutes' sampled counts (takt.store.due, the hot minute split), which the due units
    # above, measured before the split, leave out: while its minute is at split 1, a due write
    # whose key falls in the sample (one in 16) also adds to the minute's count item, a 1-unit
    # UpdateItem. COUNT_MEASURE below says what measured it and how.
    count_write_units_per_due_write: float = COUNT_WRITE_UNITS_PER_DUE_WRITE
    # How much of that rate an execution pays over the hour priced: 1 when every minute stays
    # at split 1 (one due write an execution, the steady hour); less when minutes split and
    # their sample thins (`with_minute_counts` sets it for a scenario: `hour_count_share`).
    minute_count_share: float = 1.0
    # What a call that outlives its first heartbeat adds (takt.worker.runner,
    # takt.watchdog.sweeper). The worker renews its lease every `heartbeat_sec` from the moment
    # the call starts while it has not answered: one UpdateItem on the execution (under 1 KB)
    # each. A run still going at its `check_at` (`pending_resend_after_sec` after it became
    # runnable) is found by the watchdog's sweep, `clock_margin_sec` after it and on average half
    # a sweep interval later; it reads the execution consistently and moves `check_at` to the
    # lease's expiry (the execution and a delete and a put in the `open` index), and is found
    # again there, once a lease period. A call never runs past its job's timeout (300 s, the
    # API's default). These default to the runtime's settings (`takt local`); a profile's own
    # (`leaseSec`, `heartbeatSec`, `watchdogIntervalSec`) replace them when the simulator runs
    # that profile (`takt_cli.capacity.profiles.Profile.timed`).
    heartbeat_sec: float = _shipped("heartbeat_sec")
    lease_sec: float = _shipped("lease_sec")
    pending_resend_after_sec: float = _shipped("pending_resend_after_sec")
    watchdog_interval_sec: float = _shipped("watchdog_interval_sec")
    job_timeout_sec: float = 300.0
    heartbeat_write_units: float = 1.0
    recheck_read_units: float = 1.0
    recheck_write_units: float = 1.0
    recheck_open_write_units: float = 2.0
    # A claim's executions stay out of the `open` index (takt.store.watches): one still running
    # at its watch list's check, the first look, is put there then (the execution and the
    # index's entry) and leaves it at its completion (the index's removal).
    late_index_write_units: float = 1.0
    late_index_open_write_units: float = 2.0
    dynamodb_latency_ms: float = 6.0
    sqs_latency_ms: float = 10.0
    target_latency_ms: float = 50.0
    # The spread of the call's time around `target_latency_ms` (its mean): a lognormal's sigma,
    # 0 for every call taking the mean (`JobDuration`).
    target_latency_sigma: float = 0.0
    # SQS to the event source mapping's receive, and its poll interval when the queue is busy.
    delivery_ms: float = 100.0

    def heartbeat_instants(self) -> list[float]:
        """Seconds after the call starts at which the worker renews its lease, if the call is
        still running: every `heartbeat_sec`, until the job's timeout stops the call."""
        count = math.ceil(self.job_timeout_sec / self.heartbeat_sec) - 1
        return [self.heartbeat_sec * k for k in range(1, count + 1)]

    def recheck_instants(self) -> list[float]:
        """Seconds after the call starts at which the watchdog finds the run at its `check_at`:
        the resend wait, then each time at the lease's expiry as the last heartbeat before the
        recheck set it. None when the lease itself moves `check_at` (a lease shorter than the
        resend wait, `rules.lease_moves_check_at`): each heartbeat moves it on instead."""
        if lease_moves_check_at(self.lease_sec, self.pending_resend_after_sec):
            return []
        instants = []
        found_after = watchdog_found_after(self.watchdog_interval_sec)
        at = self.pending_resend_after_sec + found_after
        while at < self.job_timeout_sec:
            instants.append(at)
            renewed = self.heartbeat_sec * math.floor(at / self.heartbeat_sec)
            at = renewed + self.lease_sec + found_after
        return instants

    @property
    def heartbeats_per_execution(self) -> float:
        """The lease renewals an execution makes, on average over the job's durations."""
        return self.job.expected_running_at(self.heartbeat_instants())

    @property
    def rechecks_per_execution(self) -> float:
        """The watchdog's rechecks of a running execution, on average over the durations."""
        return self.job.expected_running_at(self.recheck_instants())

    @property
    def late_indexed_per_execution(self) -> float:
        """The share of executions still running at the watchdog's first look, which puts
        them in the `open` index."""
        return self.job.expected_running_at(self.recheck_instants()[:1])

    def _duration_write_units(self) -> dict[tuple[str, str], float]:
        """The write units the call's duration adds per execution, by (what writes, table):
        heartbeats on the table (and on the `open` index when they move `check_at`); rechecks,
        and the first one's putting the execution in the `open` index, on both."""
        heartbeats = self.heartbeats_per_execution
        rechecks = self.rechecks_per_execution
        indexed = self.late_indexed_per_execution
        return {
            ("heartbeat", "executions"): heartbeats * self.heartbeat_write_units,
            ("heartbeat", "executions/open"): heartbeats * self.heartbeat_open_write_units,
            ("recheck", "executions"): rechecks * self.recheck_write_units
            + indexed * self.late_index_write_units,
            ("recheck", "executions/open"): rechecks * self.recheck_open_write_units
            + indexed * self.late_index_open_write_units,
        }

    @property
    def duration_write_units_by_table(self) -> dict[str, float]:
        """The write units the call's duration adds per execution, by table and index."""
        out: dict[str, float] = {}
        for (_, table), units in self._duration_write_units().items():
            out[table] = out.get(table, 0.0) + units
        return out

    @property
    def heartbeat_open_write_units(self) -> float:
        """A heartbeat's units on the `open` index: a delete and a put when it moves
        `check_at` (a lease shorter than the resend wait); none otherwise, the index
        projecting only its keys."""
        return 2.0 if lease_moves_check_at(self.lease_sec, self.pending_resend_after_sec) else 0.0

    @property
    def duration_read_units_by_table(self) -> dict[str, float]:
        """The read units the call's duration adds per execution: the rechecks' reads."""
        return {"executions": self.rechecks_per_execution * self.recheck_read_units}

    @property
    def write_units_by_table(self) -> dict[str, float]:
        """The write units per execution by table and index, as `takt_cli.capacity.billing`
        names them: the measured ones, the watch item's and what the call's duration adds."""
        measured = {
            "executions": self.executions_write_units,
            "executions/open": self.open_index_write_units_per_execution,
            "jobs": self.jobs_write_units_per_execution,
            "due": self.due_units_per_item,
        }
        watch = {"due": self.watch_due_write_units_per_execution}
        counts = {"due": self.count_write_units_per_execution}
        return _summed(measured, watch, counts, self.duration_write_units_by_table)

    @property
    def count_write_units_per_execution(self) -> float:
        """The minutes' count writes an execution pays over the hour priced."""
        return self.count_write_units_per_due_write * self.minute_count_share

    @property
    def read_units_by_table(self) -> dict[str, float]:
        """The read units per execution by table and index: the measured ones, the watch
        item's and the rechecks'."""
        watch = {"executions": self.watch_executions_read_units_per_execution}
        cursor = {"due": self.cursor_read_units_per_claim / self.items_per_claim}
        return _summed(
            self.measured_read_units_by_table,
            watch,
            cursor if self.due_cursor else {},
            self.duration_read_units_by_table,
        )

    def units_per_execution(self) -> dict[str, float]:
        """Per execution: the measured units, and what the watch item and the call's duration
        add, each apart (the scenario report's lines), and the totals the billing prices."""
        rechecks = self.rechecks_per_execution
        by_kind: dict[str, float] = {}
        for (kind, _), units in self._duration_write_units().items():
            by_kind[kind] = by_kind.get(kind, 0.0) + units
        return {
            "measured_write_units_per_execution": self.measured_write_units,
            "measured_read_units_per_execution": sum(self.measured_read_units_by_table.values()),
            "heartbeats_per_execution": self.heartbeats_per_execution,
            "heartbeat_write_units_per_execution": by_kind["heartbeat"],
            "rechecks_per_execution": rechecks,
            "recheck_write_units_per_execution": by_kind["recheck"],
            "recheck_read_units_per_execution": rechecks * self.recheck_read_units,
            "watch_write_units_per_execution": self.watch_due_write_units_per_execution,
            "watch_read_units_per_execution": self.watch_executions_read_units_per_execution,
            "count_write_units_per_execution": self.count_write_units_per_execution,
            "write_units_per_execution": sum(self.write_units_by_table.values()),
            "read_units_per_execution": sum(self.read_units_by_table.values()),
        }

    @property
    def measured_write_units(self) -> float:
        """The write units the measuring run counted (a target that answers at once)."""
        return (
            self.executions_write_units
            + self.open_index_write_units_per_execution
            + self.jobs_write_units_per_execution
            + self.due_units_per_item
        )

    @property
    def due_units_per_item(self) -> float:
        """The due table's measured units an item: the fired item's delete and the next
        item's put, or, with `due_cursor`, the put and the item's share of its claim's
        cursor write."""
        if not self.due_cursor:
            return self.due_write_units_per_item
        cursor = self.cursor_write_units_per_claim / self.items_per_claim
        return self.due_write_units_per_item - self.fired_delete_write_units_per_item + cursor

    @property
    def claim_cpu_ms_per_item(self) -> float:
        """The claimer's CPU an item, with or without the create (`record_at_lease`), and
        without the fired item's delete (`due_cursor`, measured with the record at the lease)."""
        if self.record_at_lease and self.due_cursor:
            return self.claimer_cpu_ms_per_item_cursor
        if self.record_at_lease:
            return self.claimer_cpu_ms_per_item_at_lease
        return self.claimer_cpu_ms_per_item

    @property
    def executions_write_units(self) -> float:
        """The executions table's measured units: the claim's create, the lease and the
        completion, or, with `record_at_lease`, the lease's put and the completion."""
        if self.record_at_lease:
            return self.lease_written_table_write_units_per_execution
        return self.table_write_units_per_execution

    @property
    def job(self) -> JobDuration:
        return JobDuration(self.target_latency_ms / 1000, self.target_latency_sigma)

    def claim_seconds(self, items: float, design: Design) -> tuple[float, float]:
        """(seconds until the claim's messages are sent, seconds until it ends) for `items`."""
        share = min(1.0, design.claimer_memory_mb / ONE_VCPU_MB)
        fixed = self.claimer_overhead_calls * self.dynamodb_latency_ms
        per_item = self.dynamodb_latency_ms / design.claim_parallelism
        cpu = items * self.claim_cpu_ms_per_item / share
        sends = self.send_seconds(items, design) * 1000
        # The create phase comes before the send unless the claim leaves it to the lease.
        created = 0.0 if self.record_at_lease else items * per_item
        sent = fixed + created + sends + cpu / 2
        # After the send: the next items' puts, the advances and the fired items' deletes, or
        # with the cursor, its one write in place of the deletes.
        writes = self.claimer_writes_per_item - 1 - (1 if self.due_cursor else 0)
        cursor = self.dynamodb_latency_ms if self.due_cursor else 0.0
        rest = items * per_item * writes + cursor + cpu / 2
        return sent / 1000, (sent + rest) / 1000

    def claim_items(self, per_sec: float, design: Design) -> float:
        """The items one claim takes at a steady `per_sec`: the ticker invokes one claim a
        second for each busy partition of the minute (`Design.partitions_of`), and a claim
        takes its partition's second, at least one item."""
        return max(1.0, per_sec / design.partitions_of(per_sec * 60))

    def claimer_usd_per_million(
        self, per_sec: float, design: Design, prices: Prices = US_EAST_1
    ) -> tuple[float, str]:
        """What the claimer function costs a million executions at a steady `per_sec`, and a
        line saying how. Lambda bills each claim's wall time (`claim_seconds`: its CPU at the
        vCPU share the claimer's memory buys, and its waits on DynamoDB and SQS) in
        GB-seconds at that memory, and each invocation as a request; a million executions
        take a million / `claim_items` claims. So a cut in the claim's CPU or its calls moves
        the price."""
        items = self.claim_items(per_sec, design)
        billed_sec = self.claim_seconds(items, design)[1]
        claims = 1e6 / items
        gb_seconds = claims * billed_sec * design.claimer_memory_mb / 1024
        usd = (
            claims * prices.lambda_request_per_million / 1e6 + gb_seconds * prices.lambda_gb_second
        )
        detail = (
            f"claims of {items:.1f} items, {billed_sec * 1000:.0f} ms each "
            f"at {design.claimer_memory_mb} MB"
        )
        return usd, detail

    def send_seconds(self, items: float, design: Design) -> float:
        """How long a claim spends sending `items` messages (batches of ten)."""
        return -(-items // 10) * self.sqs_latency_ms / design.claim_parallelism / 1000

    def message_seconds(self, design: Design) -> float:
        """How long a worker spends on one message, from its lease to its completion."""
        ms = (
            self.worker_calls_per_message * self.dynamodb_latency_ms
            + self.target_latency_ms
            + self.worker_cpu_ms_per_message / self._worker_share(design)
        )
        return ms / 1000

    def message_cpu_seconds(self, design: Design) -> float:
        """The CPU one message takes in the worker: messages running at once share the
        invocation's vCPU share, so each starts this much after the one before it."""
        return self.worker_cpu_ms_per_message / self._worker_share(design) / 1000

    @staticmethod
    def _worker_share(design: Design) -> float:
        return min(1.0, design.worker_memory_mb / ONE_VCPU_MB)


def profile_from_report(report: Mapping[str, Any]) -> CallProfile:
    """The call profile a `takt bench local` report measured (its `metered_per_execution`),
    its watch lists' units among the tables'."""
    metered = report["metered_per_execution"]
    calls: Mapping[str, float] = metered["aws_calls_by_function"]
    units: Mapping[str, float] = metered["dynamodb_write_units"]
    invocations = metered["invocations"]

    def calls_of(function: str, operations: tuple[str, ...]) -> float:
        return sum(
            n
            for key, n in calls.items()
            if key.startswith(f"{function}: dynamodb.") and key.rsplit(".", 1)[1] in operations
        )

    def units_of(table: str, *, index: bool) -> float:
        total = 0.0
        for key, n in units.items():
            where = key.split(": ", 1)[1].split(" ", 1)[0]
            name, _, idx = where.partition("/")
            if table in name and bool(idx) == index:
                total += n
        return total

    def cpu_per_execution(function: str) -> float:
        inv = invocations.get(function)
        return float(inv["cpu_ms_per_invocation"] * inv["count"]) if inv else 0.0

    writes = ("PutItem", "UpdateItem", "DeleteItem")
    return replace(
        CallProfile(),
        claimer_writes_per_item=calls_of("claimer", writes),
        claimer_cpu_ms_per_item=cpu_per_execution("claimer"),
        worker_calls_per_message=calls_of("worker", (*writes, "GetItem", "Query")),
        worker_cpu_ms_per_message=cpu_per_execution("worker"),
        due_write_units_per_item=units_of("due", index=False),
        jobs_write_units_per_execution=units_of("jobs", index=False),
        open_index_write_units_per_execution=units_of("executions", index=True),
        table_write_units_per_execution=units_of("executions", index=False),
        measured_read_units_by_table=units_by_table(metered["dynamodb_read_units"]),
        # The run's units hold its watch lists' already (the claim's put among the due
        # table's, the watchdog's delete and reads as `watch-check`), and its minutes' count
        # writes (the claimer's due UpdateItem), at the run's split of 1.
        watch_due_write_units_per_execution=0.0,
        watch_executions_read_units_per_execution=0.0,
        count_write_units_per_due_write=0.0,
    )


def minute_count_writes(items: float, design: Design) -> float:
    """The count writes of a minute whose `items` are written one after another, as a number
    of due writes at split 1's rate (takt.store.due): each item at split 1, a k-th of one at
    split k (its writer samples one item in 16k and adds 16k), none once the split is at its
    cap (the writers stop counting). The split is k while the count is above N*I*k/2 and at
    most N*I*k (N `due_shards`, I `due_split_items`): `bench/due_split.py`, the shipped
    hashing over a minute's items, counts 19,804 writes for the seed's million at N = 64,
    where this gives 317,000 due writes' worth, 19,812 at one in 16."""
    total = 0.0
    written = 0.0
    k = 1
    while k < design.due_split_max and written < items:
        bound = float(design.due_shards * design.due_split_items * k)
        total += (min(items, bound) - written) / k
        written = bound
        k *= 2
    return total


def hour_count_share(design: Design, executions_per_hour: float, burst: float) -> float:
    """What share of split 1's count rate an hour's executions pay: `burst` of them due in its
    first minute, the rest spread evenly over its 60 minutes (each execution indexes its next
    occurrence in the minute it is due, a recurring job's: the seed's), every minute's count
    thinning as it splits (`minute_count_writes`). A model of the thinning, not a bound: it
    assumes a minute's items are written one after another, as the previous hour's claims
    write them."""
    per_minute = (executions_per_hour - burst) / 60
    writes = minute_count_writes(per_minute + burst, design)
    writes += 59 * minute_count_writes(per_minute, design)
    return writes / executions_per_hour


def with_claim_items(calls: CallProfile, per_sec: float, design: Design) -> CallProfile:
    """`calls` with its cursor's write and read shared by the items of a claim at the steady
    `per_sec` on `design` (`CallProfile.claim_items`)."""
    return replace(calls, items_per_claim=calls.claim_items(per_sec, design))


def with_minute_counts(
    calls: CallProfile, design: Design, executions_per_hour: float, burst: float
) -> CallProfile:
    """`calls` with its minutes' count writes priced for an hour of `executions_per_hour`,
    `burst` of them in its first minute, on `design` (`hour_count_share`)."""
    share = hour_count_share(design, executions_per_hour, burst)
    return replace(calls, minute_count_share=share)


def _summed(*parts: Mapping[str, float]) -> dict[str, float]:
    """Units by table added up over `parts`, leaving out tables with none."""
    out: dict[str, float] = {}
    for part in parts:
        for name, units in part.items():
            if units:
                out[name] = out.get(name, 0.0) + units
    return out


@dataclass(frozen=True)
class JobDuration:
    """How long a job's call takes: `mean_sec` always, and with `sigma` > 0 a lognormal spread
    of that mean (sigma is the log's standard deviation: 1.0 puts the p99 at about 5 times the
    mean, the long tail of calls that mostly answer fast and sometimes hang).

    Written `lognormal:MEAN:SIGMA` or `fixed:MEAN` on the command line (`parse`).
    """

    mean_sec: float
    sigma: float = 0.0

    @classmethod
    def parse(cls, text: str) -> JobDuration:
        kind, _, rest = text.partition(":")
        parts = rest.split(":") if rest else []
        try:
            numbers = [float(part) for part in parts]
        except ValueError:
            raise ValueError(f"not a number in {text!r}") from None
        if kind == "fixed" and len(numbers) == 1 and numbers[0] > 0:
            return cls(numbers[0])
        if kind == "lognormal" and len(numbers) == 2 and numbers[0] > 0 and numbers[1] >= 0:
            return cls(numbers[0], numbers[1])
        raise ValueError(f"expected fixed:MEAN or lognormal:MEAN:SIGMA, not {text!r}")

    def quantile(self, q: float) -> float:
        """The duration `q` of the calls stay under (0 < q < 1)."""
        if self.sigma <= 0:
            return self.mean_sec
        mu = math.log(self.mean_sec) - self.sigma**2 / 2
        return math.exp(mu + self.sigma * NormalDist().inv_cdf(q))

    def expected_max(self, n: int) -> float:
        """About how long the slowest of `n` calls takes (the n/(n+1) quantile): a worker
        invocation running a batch of `n` at once lasts that long and is billed for it."""
        return self.quantile(n / (n + 1)) if n > 1 else self.mean_sec

    def groups(self, count: int = 10) -> list[tuple[float, float]]:
        """(duration, share) for `count` equal shares of the calls, each at its midpoint
        quantile, scaled so their mean is the mean: cohorts of runs that end apart."""
        if self.sigma <= 0:
            return [(self.mean_sec, 1.0)]
        points = [self.quantile((i + 0.5) / count) for i in range(count)]
        scale = self.mean_sec / (sum(points) / count)
        return [(point * scale, 1 / count) for point in points]

    def survival(self, seconds: float) -> float:
        """The share of calls still running `seconds` after they start (a call is counted at
        an instant it ends on, as its own round trip puts the answer just after it)."""
        if self.sigma <= 0:
            return 1.0 if self.mean_sec >= seconds else 0.0
        if seconds <= 0:
            return 1.0
        mu = math.log(self.mean_sec) - self.sigma**2 / 2
        return 1.0 - NormalDist(mu, self.sigma).cdf(math.log(seconds))

    def expected_running_at(self, instants: Iterable[float]) -> float:
        """How many of `instants` a call is still running at, on average: each instant counts
        the share of calls that outlast it (exact, from the distribution's CDF)."""
        return sum(self.survival(at) for at in instants)

    def describe(self) -> str:
        if self.sigma <= 0:
            return f"fixed:{self.mean_sec:g}"
        return (
            f"lognormal:{self.mean_sec:g}:{self.sigma:g} "
            f"(p50 {self.quantile(0.5):.1f} s, p99 {self.quantile(0.99):.1f} s)"
        )
