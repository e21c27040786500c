"""The Fargate design's SQS line is what `takt worker` sends (takt_cli.capacity.worker_sqs),
not the worker function's metered requests: each figure is recomputed here by hand from the
seed's steady hour (1,400 executions a second of 10 s calls, 5 M an hour)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from takt_cli.capacity.model import CallProfile, Design
from takt_cli.capacity.scenarios import SEED, all_in_cost, profile_components, scaled_ahead
from takt_cli.capacity.worker_sqs import FARGATE_LANES, FargateSqs

SQS_PER_MILLION = 0.40
PROFILES = Path(__file__).resolve().parents[3] / "cli/takt_cli/profiles.json"


def _ten_second_calls() -> CallProfile:
    return replace(CallProfile(), target_latency_ms=10_000)


def test_the_fargate_sqs_line_is_the_workers_own_requests_recomputed_by_hand() -> None:
    scenario, calls = SEED[0], _ten_second_calls()
    fleet = scaled_ahead(scenario, Design(), calls)

    lines = all_in_cost(scenario, fleet, calls, profile_components(calls))[
        "usd_per_million_breakdown"
    ]

    # 1,400/s over 64 due partitions: 21.875 a partition-second, sent in 3 batches of 7.29.
    clump = 21.875 / 3
    sends = 3 / 21.875
    # 320 slots at 80 % busy leave 64 free: a receive takes the clump; one round in three
    # (the `low` lane's pick, weights 2:1) polls the empty `low` lane first.
    receives = (1 + 1 / 3) / clump
    # 14,000 calls at once on 256 busy slots a task: 55 tasks, 25.5 runs a task-second, so a
    # delete batch holds the receive's clump and 2.55 more leased within its 0.1 s.
    tasks = math.ceil(14_000 / 256)
    deletes = 1 / (clump + 1400 / tasks * 0.1)
    # An idle round a task-second (two short polls, one long poll), 55 task-hours an hour.
    idle = tasks * 3 * 3600 / 5_000_000
    requests = sends + receives + deletes + idle
    assert (tasks, round(requests, 3)) == (55, 0.540)
    assert lines[f"SQS requests: the Fargate worker's ({requests:.3f} an execution)"] == (
        pytest.approx(requests * SQS_PER_MILLION, abs=0.0005)
    ), "the Fargate design's SQS line prices the worker's own sends, receives and deletes"
    assert "SQS requests" not in lines, "not the worker function's metered requests"
    assert not any("visibility" in name for name in lines), "no visibility extension is made"


def test_the_worker_functions_sqs_line_stays_the_metered_one() -> None:
    scenario, calls = SEED[0], _ten_second_calls()

    lines = all_in_cost(scenario, Design(), calls, profile_components(calls))[
        "usd_per_million_breakdown"
    ]

    assert lines["SQS requests"] == 0.14, "the Lambda path's metered line (docs/CAPACITY.md)"


def test_a_round_polls_the_lanes_its_pick_puts_first_and_finds_them_empty() -> None:
    served = FargateSqs(per_sec=1400, tasks=88, slots=200, partitions=64)
    every_lane = replace(served, lanes=("high", "default", "low"))

    assert served.empty_polls_per_round == pytest.approx(1 / 3)
    assert every_lane.empty_polls_per_round == pytest.approx(6 / 7), (
        "with the high lane served too: high leads 4 rounds in 7 and low 1 (then high)"
    )


def test_a_receive_takes_no_more_than_the_free_slots_and_a_batch_no_more_than_ten() -> None:
    crowded = FargateSqs(per_sec=1400, tasks=88, slots=20, partitions=8)
    lone = FargateSqs(per_sec=5000, tasks=1, slots=2000, partitions=1)

    assert crowded.messages_per_receive == pytest.approx(4.0), "20 slots at 80 % busy leave 4 free"
    assert lone.per_execution()["deletes"] == 0.1, "ten receipts to a DeleteMessageBatch"
    assert lone.per_execution()["sends"] == 0.1, "ten messages to a SendMessageBatch"


def test_every_profile_serves_on_fargate_the_lanes_the_sqs_line_polls() -> None:
    profiles = json.loads(PROFILES.read_text())

    lanes = {
        name: tuple(profile["context"]["fargateLanes"])
        for name, profile in profiles.items()
        if isinstance(profile, dict) and "context" in profile
    }

    assert lanes and set(lanes.values()) == {FARGATE_LANES}, (
        "the idle polling and a round's empty polls count the lanes a task serves"
    )
