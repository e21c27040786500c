"""The seed's steady and top-of-the-hour loads on the worker function (as shipped) and on Fargate
workers scaled ahead of the due index, side by side, with the all-in cost per million by component.

    .venv/bin/python bench/fargate_ahead.py --job-seconds-dist fixed:10
    .venv/bin/python bench/fargate_ahead.py --job-seconds-dist lognormal:10:1.0

The top of the hour's planned dispatch side is the planner's answer for it (docs/CAPACITY.md:
N=1024, 32 writes in flight, quotas raised to what a first run asks), computed here in two runs
instead of `takt bench simulate`'s whole search. Prints one JSON line per (scenario, design).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from takt_cli.capacity.model import CallProfile, Design, JobDuration, Limits
from takt_cli.capacity.scenarios import (
    DRAIN_SEC,
    SEED,
    Scenario,
    all_in_cost,
    on_fargate,
    profile_components,
    quotas_asked,
    summarize,
)
from takt_cli.capacity.sim import Simulator

KEYS = (
    "start_lag_sec",
    "dispatch_lag_sec",
    "burst_dispatched_within_sec",
    "not_dispatched",
    "not_started",
    "fargate_tasks_scaled_ahead",
    "fargate_slots_busy_peak",
    "lambda_concurrency_peak",
    "usd_per_million_executions",
    "usd_per_million_breakdown",
    "quotas_and_settings",
)


def _print(scenario: Scenario, design: str, calls: CallProfile, report: dict[str, Any]) -> None:
    line = {"scenario": scenario.name, "design": design, "job": calls.job.describe()}
    line |= {key: report[key] for key in KEYS if key in report}
    print(json.dumps(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job-seconds-dist", default="fixed:10")
    args = parser.parse_args()
    job = JobDuration.parse(args.job_seconds_dist)
    calls = replace(
        CallProfile(), target_latency_ms=job.mean_sec * 1000, target_latency_sigma=job.sigma
    )
    metered = profile_components(calls)
    steady, top = SEED[0], SEED[1]

    shipped = Simulator(steady.load, Design(), calls=calls, drain_sec=DRAIN_SEC).run()
    _print(
        steady,
        "worker function, as shipped",
        calls,
        summarize(steady, shipped) | all_in_cost(steady, Design(), calls, metered),
    )
    _print(
        steady,
        "Fargate scaled ahead",
        calls,
        on_fargate(steady, Design(), Limits(), calls, metered),
    )

    first = Simulator(
        top.load, Design(due_shards=1024, claim_parallelism=32), calls=calls, drain_sec=DRAIN_SEC
    ).run()
    planned, limits, asks = quotas_asked(top, first, calls)
    result = Simulator(top.load, planned, limits, calls, drain_sec=DRAIN_SEC).run()
    _print(
        top,
        "planned dispatch (N=1024, 32 in flight), worker function",
        calls,
        summarize(top, result)
        | all_in_cost(top, planned, calls, metered)
        | {"quotas_and_settings": asks},
    )
    _print(
        top,
        "planned dispatch, Fargate scaled ahead",
        calls,
        on_fargate(top, planned, limits, calls, metered),
    )
    _print(
        top,
        "planned dispatch claimed 30 s ahead, Fargate scaled ahead",
        calls,
        on_fargate(
            top,
            replace(planned, dispatch_ahead_sec=30.0, delay_in_sqs=True),
            limits,
            calls,
            metered,
        ),
    )


if __name__ == "__main__":
    main()
