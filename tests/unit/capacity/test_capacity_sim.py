"""The simulator on small scenarios whose answers are known by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from takt.dispatch.ticker import claim_order
from takt_cli.capacity import sim
from takt_cli.capacity.model import CallProfile, Design, Limits
from takt_cli.capacity.scenarios import SEED, quotas_asked
from takt_cli.capacity.sim import Load, SimResult, Simulator

# A worker message of exactly 100 ms (no AWS call, no CPU, a 100 ms target), free claims, and
# write units only where a test asks for them.
FLAT = CallProfile(
    due_write_units_per_item=1,
    jobs_write_units_per_execution=0,
    open_index_write_units_per_execution=0,
    table_write_units_per_execution=0,
    claimer_writes_per_item=1,
    claimer_cpu_ms_per_item=0,
    claimer_overhead_calls=0,
    worker_calls_per_message=0,
    worker_cpu_ms_per_message=0,
    fargate_cpu_ms_per_execution=0,
    dynamodb_latency_ms=0.1,
    sqs_latency_ms=0.1,
    target_latency_ms=100,
    delivery_ms=0,
)


def test_a_light_steady_load_starts_on_time_and_finishes_everything() -> None:
    result = Simulator(
        Load(steady_per_sec=10, duration_sec=10), Design(due_shards=1, lane_max_concurrency=50)
    ).run()
    assert result.undispatched == pytest.approx(0, abs=1e-6)
    assert result.unstarted == pytest.approx(0, abs=1e-6)
    # Within DESIGN's 2 s: the tick, then a batch's ten ~100 ms messages one after another.
    assert result.start_lag["p99"] < 2.0
    assert result.throttled == {}


def test_the_lanes_concurrency_caps_throughput_and_the_backlog_shows_as_lag() -> None:
    # Two concurrent batches of ten 100 ms messages run one after another serve 20/s; 40/s for
    # 10 s leaves 200 messages behind at t=10, served by t=20: the last one starts about 10 s
    # late, plus up to a second waiting for its tick (nothing is claimed ahead) and the first
    # instances' cold start (0.8 s).
    result = Simulator(
        Load(steady_per_sec=40, duration_sec=10),
        Design(
            due_shards=1,
            lane_max_concurrency=2,
            dispatch_ahead_sec=0,
            batch_size=10,
            batch_concurrency=1,
        ),
        calls=FLAT,
        warm_rate=0,
    ).run()
    assert result.peak_concurrency["worker"] == 2
    assert 10.0 <= result.start_lag["max"] <= 13.0
    assert result.unstarted == pytest.approx(0, abs=1e-6)


def test_a_batch_run_side_by_side_serves_ten_times_the_sequential_rate() -> None:
    # The same two batches with their ten messages at once serve 200/s: 40/s leaves no backlog,
    # and the worst start is the tick wait and the cold start, not ten messages' calls.
    result = Simulator(
        Load(steady_per_sec=40, duration_sec=10),
        Design(
            due_shards=1,
            lane_max_concurrency=2,
            dispatch_ahead_sec=0,
            batch_size=10,
            batch_concurrency=10,
        ),
        calls=FLAT,
        warm_rate=0,
    ).run()
    assert result.start_lag["max"] <= 2.5
    assert result.unstarted == pytest.approx(0, abs=1e-6)


def test_a_due_partition_lets_through_no_more_than_its_write_units() -> None:
    # 5,000 items due at once in one partition (the minute not split), claimed with enough
    # parallelism to be instant: the partition's 1,000 write units a second make the claim
    # last about 5 s.
    load = Load(steady_per_sec=0, duration_sec=1, burst=5000, burst_at=0, burst_at_zero=1.0)
    design = Design(
        due_shards=1, due_split_max=1, claim_parallelism=10_000, lane_max_concurrency=1000
    )
    result = Simulator(load, design, calls=FLAT, warm_rate=0).run()
    assert result.burst_dispatched_within_sec is not None
    assert 4.0 <= result.burst_dispatched_within_sec <= 6.0
    assert "due partition (busiest)" in result.throttled
    spread = Simulator(load, Design(due_shards=8, claim_parallelism=10_000), calls=FLAT).run()
    assert spread.burst_dispatched_within_sec is not None
    assert spread.burst_dispatched_within_sec < 1.5


def test_a_narrow_open_index_throttles_the_workers() -> None:
    # 500 executions a second, four index write units each, over one open-index partition
    # (1,000 units a second): half of what is asked.
    load = Load(steady_per_sec=500, duration_sec=10)
    calls = replace(FLAT, open_index_write_units_per_execution=4)
    narrow = Simulator(
        load, Design(due_shards=4, open_shards=1, lane_max_concurrency=500), calls=calls
    ).run()
    wide = Simulator(
        load, Design(due_shards=4, open_shards=8, lane_max_concurrency=500), calls=calls
    ).run()
    assert "open index (all shards)" in narrow.throttled
    assert "open index (all shards)" not in wide.throttled
    assert narrow.start_lag["max"] > wide.start_lag["max"] + 2


def test_account_concurrency_bounds_every_function_together() -> None:
    load = Load(steady_per_sec=2000, duration_sec=5)
    result = Simulator(
        load,
        Design(due_shards=16, lane_max_concurrency=1000),
        Limits(account_concurrency=50),
        calls=FLAT,
        warm_rate=0,
    ).run()
    assert result.peak_concurrency["total"] <= 50


def _fleet(tasks: int, slots: int, **design: object) -> Design:
    return replace(
        Design(due_shards=1, dispatch_ahead_sec=0),
        fargate_tasks=tasks,
        fargate_slots=slots,
        fargate_vcpu=1.0,
        **design,  # type: ignore[arg-type]
    )


def test_a_fargate_fleet_runs_as_many_calls_at_once_as_it_has_slots() -> None:
    # 2 tasks of 10 slots and calls of 1 s serve 20/s: 10/s starts at once; 40/s for 10 s
    # leaves 200 behind at t=10, served by t=20, so the last starts about 10 s late, plus up
    # to a second waiting for its tick (nothing is claimed ahead) and the grid's steps.
    one_second = replace(FLAT, target_latency_ms=1000)
    light = Simulator(
        Load(steady_per_sec=10, duration_sec=10), _fleet(2, 10), calls=one_second, warm_rate=0
    ).run()
    heavy = Simulator(
        Load(steady_per_sec=40, duration_sec=10), _fleet(2, 10), calls=one_second, warm_rate=0
    ).run()

    assert light.start_lag["max"] < 1.2
    assert light.peak_concurrency["worker"] == 0
    assert heavy.peak_concurrency["fargate_slots_busy"] == pytest.approx(20, abs=0.5)
    assert 10.0 <= heavy.start_lag["max"] <= 13.0
    assert heavy.unstarted == pytest.approx(0, abs=1e-6)


def test_a_long_tail_holds_a_lambda_batch_until_its_slowest_call_but_a_slot_only_for_its_own() -> (
    None
):
    # Mean 1 s either way; with sigma 1.5 the slowest of a batch of 10 takes about 2.4 s, so a
    # lane of 10 concurrent batches serves about 42/s instead of 100/s, and 80/s for 20 s leaves
    # a backlog of ~760; a fleet's slots free as each call ends.
    load = Load(steady_per_sec=80, duration_sec=20)
    flat = replace(FLAT, target_latency_ms=1000)
    tail = replace(flat, target_latency_sigma=1.5)
    lanes = Design(due_shards=1, dispatch_ahead_sec=0, lane_max_concurrency=10, batch_size=10)

    lane_flat = Simulator(load, lanes, calls=flat, warm_rate=80).run()
    lane_tail = Simulator(load, lanes, calls=tail, warm_rate=80).run()
    fleet_tail = Simulator(load, _fleet(1, 200), calls=tail, warm_rate=80).run()

    assert lane_flat.start_lag["p99"] < 2.0
    assert lane_tail.start_lag["p99"] > 10.0
    assert fleet_tail.start_lag["p99"] < 1.2


def _result(design: Design, worker_peak: float) -> SimResult:
    return SimResult(
        design=design,
        dispatched_per_sec={},
        dispatch_lag={},
        start_lag={},
        burst_dispatched_within_sec=None,
        peak_concurrency={"worker": worker_peak, "claimer": 0.0, "total": worker_peak},
        concurrency_wanted=0,
        peak_write_units={},
        write_capacity={},
        throttled={},
        undispatched=0,
        unstarted=0,
    )


def test_the_planner_counts_invocations_of_whole_batches_not_messages() -> None:
    # The top of the hour's busiest minute, 18,067 executions a second of 10 s calls: batches
    # of 100 run at once need 18,067 / 100 x (10 s + half the 1 s horizon) / 0.8 = about 2,380
    # invocations, three event sources' worth; one after another, 100 times as many.
    calls = replace(CallProfile(), target_latency_ms=10_000)
    top = SEED[1]

    _, _, at_once = quotas_asked(top, _result(Design(), 0), calls, Design())
    _, _, sequential = quotas_asked(top, _result(Design(batch_concurrency=1), 0), calls, Design())

    beyond = "workers beyond one event source's 1,000 concurrent batches"
    assert at_once[beyond].startswith("23") and "over 3 queues" in at_once[beyond]
    assert int(sequential[beyond].split()[0]) > 200_000


def test_the_planner_sizes_the_executions_table_for_the_runs_heartbeats_too() -> None:
    # The busiest minute's 18,067 executions a second each write the execution three times
    # (create, lease, completion) and a 10 s call renews its lease once: 4 units, over the 0.8
    # headroom. A call that answers at once renews nothing: 3 units.
    top = SEED[1]
    rate = 1400 + 1_000_000 / 60
    quota = "executions table on-demand quota (write units/s, default 40,000)"

    _, _, ten_s = quotas_asked(
        top, _result(Design(), 0), replace(CallProfile(), target_latency_ms=10_000), Design()
    )
    _, _, at_once = quotas_asked(top, _result(Design(), 0), CallProfile(), Design())

    assert ten_s[quota] == round(rate * 4 / 0.8)
    assert at_once[quota] == round(rate * 3 / 0.8)


def test_the_runs_heartbeats_use_the_tables_write_capacity() -> None:
    # Only the execution's heartbeats write: 10 a second for 10 s, calls of 10 s with 3 s
    # heartbeats (three each). The table's demand is what the heartbeats write while the calls
    # run, and nothing else; with no call long enough to renew its lease, nothing.
    load = Load(steady_per_sec=10, duration_sec=10)
    design = Design(due_shards=1, lane_max_concurrency=50)
    renewing = replace(FLAT, due_write_units_per_item=0, target_latency_ms=10_000, heartbeat_sec=3)
    quick = replace(renewing, target_latency_ms=1_000)

    busy = Simulator(load, design, calls=renewing).run().peak_write_units
    idle = Simulator(load, design, calls=quick).run().peak_write_units

    assert busy["table (on-demand)"] == pytest.approx(10 * 3, rel=0.15)
    assert idle["table (on-demand)"] == 0


# 5,000 items due in the first second of the minute starting at t=30, all at its first instant.
# Claimers that start with no cold start: the tick's shuffled order (takt.dispatch.ticker's
# `claim_order`) would otherwise decide which partition's claim pays one.
WARM = Limits(cold_start_ms=0)
MINUTE_ZERO = Load(steady_per_sec=0, duration_sec=31, burst=5000, burst_at=30, burst_at_zero=1.0)
# One due shard whose claims write as fast as the partition lets them (1,000 units a second),
# claiming each second at that second (no second ahead).
ONE_SHARD = Design(
    due_shards=1, claim_parallelism=10_000, lane_max_concurrency=1000, dispatch_ahead_sec=0
)


def test_the_minutes_first_second_claimed_ahead_is_dispatched_before_it_and_starts_on_time() -> (
    None
):
    """Rule: from `burst_ahead_sec` before a minute its first second is claimed, each message
    delayed by SQS to its second (takt.dispatch.claimer.claim_horizon). Unsplit, the 5,000
    items take their partition's 1,000 write units a second for 5 s: claimed 30 s ahead that
    is done before the minute and they start on time; claimed at their second they start 5 s
    late. (Fargate slots for all of them, so the workers' scaling plays no part.)"""
    unsplit = replace(
        ONE_SHARD, due_split_max=1, fargate_tasks=5, fargate_slots=1000, fargate_vcpu=1.0
    )

    ahead = Simulator(MINUTE_ZERO, unsplit, calls=FLAT, warm_rate=5000).run()
    at_its_second = Simulator(
        MINUTE_ZERO, replace(unsplit, burst_ahead_sec=0), calls=FLAT, warm_rate=5000
    ).run()

    assert ahead.burst_dispatched_within_sec == 0, "claimed ahead: all sent before the minute"
    assert ahead.start_lag["max"] < 1.0, "claimed ahead: each starts at its second"
    assert ahead.unstarted == pytest.approx(0, abs=1e-6)
    assert at_its_second.burst_dispatched_within_sec is not None
    assert at_its_second.burst_dispatched_within_sec >= 4.0
    assert at_its_second.start_lag["max"] >= 4.0, "the control: without the claim ahead, late"


def test_a_hot_minute_is_split_into_the_fewest_powers_of_two_its_count_needs() -> None:
    """Rule (takt.store.due's split): a minute of C items over N shards is spread over N*k
    partitions, k the smallest power of two with N*k*dueSplitItems >= C, at most dueSplitMax."""
    seed = Design(due_shards=64, due_split_items=2000, due_split_max=16)

    assert seed.partitions_of(128_000) == 64, "a minute within N*dueSplitItems is not split"
    assert seed.partitions_of(128_001) == 128
    assert seed.partitions_of(1_084_000) == 1024, "the top of the hour: k = 16"
    assert seed.partitions_of(10_840_000) == 1024, "k is capped at dueSplitMax"


def test_a_split_minutes_partitions_are_claimed_at_once_each_by_its_own_claimer() -> None:
    """Rule: each sub-partition of a split minute is claimed by a claimer of its own,
    concurrently, and writes its own partition's 1,000 units a second. The 5,000 items at the
    minute's first instant (claimed at it) over 4 partitions (2,500, 1,250, 625 and 625:
    `test_a_split_minutes_base_shard_keeps_what_was_written_before_it_split`) take about 1.5 s,
    not the 5 s one partition takes; with a claimer reserved concurrency of 1 they are claimed
    one partition after another."""
    at_its_second = replace(ONE_SHARD, burst_ahead_sec=0, due_split_items=1250, due_split_max=4)

    split = Simulator(MINUTE_ZERO, at_its_second, WARM, calls=FLAT, warm_rate=5000).run()
    one_at_a_time = Simulator(
        MINUTE_ZERO, replace(at_its_second, claimer_concurrency=1), WARM, FLAT, warm_rate=5000
    ).run()

    assert split.peak_concurrency["claimer"] == 4, "one claimer per sub-partition, at once"
    assert split.burst_dispatched_within_sec is not None
    assert 1.0 <= split.burst_dispatched_within_sec <= 2.0, "four partitions claimed at once"
    assert one_at_a_time.peak_concurrency["claimer"] == 1, "the reservation caps the claims"
    assert one_at_a_time.burst_dispatched_within_sec is not None
    assert one_at_a_time.burst_dispatched_within_sec >= 3.0


def test_a_split_minutes_base_shard_keeps_what_was_written_before_it_split() -> None:
    """Rule (takt.store.due: k only grows, an item goes to crc32 mod N*k of the k its writer
    saw): the items written before a minute split stay in its first partitions. 5,000 items
    over one shard, split at 1,250 and 2,500 items to 4 partitions: 1,250 in partition 0, the
    next 1,250 over two (625 each), the last 2,500 over four (625 each). The burst is then
    dispatched when partition 0's 2,500 writes are through (one second of the partition's
    1,000 units a second, and one of burst), not the even 1,250's."""
    at_its_second = replace(ONE_SHARD, burst_ahead_sec=0, due_split_items=1250, due_split_max=4)
    seed = Design(due_shards=64)

    assert at_its_second.partition_shares(5000) == [0.5, 0.25, 0.125, 0.125], (
        "the hot minute split: a minute's base shards keep what was written before it split"
    )
    shares = seed.partition_shares(1_000_000)
    # bench/due_split.py, the shipped hashing and its writers' stale splits: 915 to 5,000.
    assert (round(shares[0] * 1e6), round(shares[-1] * 1e6)) == (4953, 953)
    split = Simulator(MINUTE_ZERO, at_its_second, WARM, calls=FLAT, warm_rate=5000).run()
    assert split.burst_dispatched_within_sec == pytest.approx(1.5), (
        "the hot minute split: a split minute is dispatched when its busiest partition is"
    )


def test_a_queue_hands_out_no_more_than_its_in_flight_limit_and_a_lease_frees_it() -> None:
    """Rule: a standard queue holds at most `sqs_in_flight_per_queue` messages received and not
    deleted; `takt worker` deletes a message once it holds the lease. 1,000 calls of 10 s due
    at once, a fleet of 2,000 slots, a queue of 100 in flight: deleted after the call, 100 run
    at a time and the last starts about 90 s late; deleted at the lease, all start at once."""
    load = Load(steady_per_sec=0, duration_sec=1, burst=1000, burst_at=0, burst_at_zero=1.0)
    ten_seconds = replace(FLAT, target_latency_ms=10_000)
    narrow = Limits(sqs_in_flight_per_queue=100)
    fleet = _fleet(10, 200, claim_parallelism=10_000, due_split_max=1)

    at_lease = Simulator(load, fleet, narrow, calls=ten_seconds, warm_rate=1000).run()
    after_call = Simulator(
        load, replace(fleet, fargate_deletes_at_lease=False), narrow, ten_seconds, warm_rate=1000
    ).run()

    assert after_call.peak_sqs_in_flight <= 100, "no receive beyond the in-flight limit"
    assert after_call.peak_concurrency["fargate_slots_busy"] == pytest.approx(100, abs=0.5)
    assert 85.0 <= after_call.start_lag["max"] <= 95.0, "held for the call: ten waves of 10 s"
    assert at_lease.peak_sqs_in_flight <= 100
    assert at_lease.start_lag["max"] < 3.0, "deleted at the lease: the limit holds no call back"
    assert at_lease.unstarted == after_call.unstarted == pytest.approx(0, abs=1e-6)


def test_a_message_claimed_ahead_holds_no_in_flight_message_while_it_waits_for_its_time() -> None:
    """Rule: `takt worker` releases a message claimed ahead of its time before its hold, so
    its wait counts against no in-flight limit. 1,000 calls due at 30 s, claimed ahead, each
    visible a second before its time; a queue of 100 in flight: all are received in that
    second, 100 a step, and start on their time. Held until their time, 100 would start on
    time and the other 900 only as each 100 left, over most of a second."""
    load = Load(steady_per_sec=0, duration_sec=31, burst=1000, burst_at=30, burst_at_zero=1.0)
    ten_seconds = replace(FLAT, target_latency_ms=10_000)
    narrow = Limits(sqs_in_flight_per_queue=100)
    fleet = _fleet(10, 200, claim_parallelism=10_000, dispatch_ahead_sec=1.0, burst_ahead_sec=5)

    result = Simulator(load, fleet, narrow, calls=ten_seconds, warm_rate=1000).run()

    assert result.peak_sqs_in_flight <= 100
    assert result.start_lag["max"] < 0.2, (
        "issue 26: released before its hold, a message claimed ahead waits for its time out of "
        f"the queue's in-flight count: the last started {result.start_lag['max']} s late"
    )
    assert result.unstarted == pytest.approx(0, abs=1e-6)


def test_a_ticks_claims_start_shuffled_so_no_partition_waits_last_for_a_free_claimer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rule (takt.dispatch.ticker `claim_order`): a tick starts its claims in an order shuffled
    by its second. 64,000 due over a minute split into 32 partitions, the base shards holding
    more, and 16 claimers: in a fixed order the lowest partitions, busy again every tick, take
    the free claimers every time, and the last sub-partitions wait until the minute is over;
    shuffled, every busy partition has the same chance each tick."""
    load = Load(steady_per_sec=0, duration_sec=70, burst=64_000, burst_at=10, burst_at_zero=0.2)
    design = replace(
        ONE_SHARD,
        due_shards=8,
        due_split_items=500,
        due_split_max=4,
        burst_ahead_sec=0,
        claimer_concurrency=16,
    )

    shuffled = Simulator(load, design, WARM, calls=FLAT, warm_rate=5000).run()
    monkeypatch.setattr(sim, "claim_order", lambda claims, second: list(claims))
    fixed = Simulator(load, design, WARM, calls=FLAT, warm_rate=5000).run()

    assert fixed.dispatch_lag["p99"] > 60.0, "in a fixed order the last partitions starve"
    assert shuffled.dispatch_lag["p99"] < 15.0, (
        "issue 26: shuffled each tick, no partition waits for the others' whole minute "
        f"(dispatch lag p99 {shuffled.dispatch_lag['p99']} s, {fixed.dispatch_lag['p99']} s "
        "in a fixed order)"
    )
    assert [claim_order(range(32), 7)] * 2 == [claim_order(range(32), 7) for _ in range(2)], (
        "the same second shuffles the same way: a tick redone claims in the same order"
    )


def test_a_fargate_task_starts_no_more_runs_a_second_than_its_vcpu_carries() -> None:
    """Rule: a task starts runs no faster than its vCPU runs them at the Fargate worker's own
    measured CPU per execution (bench/worker_slots.py), not the worker function's: one task
    of 0.5 vCPU at 10 ms a run starts 50 a second, so 100/s for 10 s leaves about 500 waiting
    (the last starts about 10 s late) however many slots it has free."""
    ten_seconds = replace(FLAT, target_latency_ms=10_000)
    design = replace(_fleet(1, 1000), fargate_vcpu=0.5)
    load = Load(steady_per_sec=100, duration_sec=10)

    bound = Simulator(
        load, design, calls=replace(ten_seconds, fargate_cpu_ms_per_execution=10), warm_rate=0
    ).run()
    lambda_cpu_only = Simulator(
        load, design, calls=replace(ten_seconds, worker_cpu_ms_per_message=10), warm_rate=0
    ).run()

    assert 8.0 <= bound.start_lag["max"] <= 12.0, (
        "a 0.5 vCPU task at 10 ms a run starts at most 50 runs a second"
    )
    assert lambda_cpu_only.start_lag["max"] < 1.5, (
        "the worker function's CPU figure does not bound the Fargate task's starts"
    )
