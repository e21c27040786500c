"""The seed's steady and top-of-the-hour loads with jobs that take `--job-seconds`, for the worker
designs side by side: a batch's messages one after another (before 2026-12-01), at once in
batches of 10, and at once in batches of 100 on a 1,024 MB worker (as shipped).

    .venv/bin/python bench/job_seconds.py --job-seconds 10

Prints one JSON line per (scenario, design): start lag, what was not started, the peak worker
concurrency and the worker Lambda's wait cost per million executions.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from takt_cli.capacity.cost import worker_wait_usd_per_million
from takt_cli.capacity.model import CallProfile, Design
from takt_cli.capacity.scenarios import DRAIN_SEC, SEED
from takt_cli.capacity.sim import Simulator

DESIGNS = {
    "one after another, batches of 10, 512 MB (before)": Design(
        batch_size=10, batch_concurrency=1, worker_memory_mb=512
    ),
    "at once, batches of 10, 512 MB": Design(
        batch_size=10, batch_concurrency=10, worker_memory_mb=512
    ),
    "at once, batches of 100, 1,024 MB (as shipped)": Design(),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job-seconds", type=float, default=10.0)
    args = parser.parse_args()
    calls = replace(CallProfile(), target_latency_ms=args.job_seconds * 1000)
    for scenario in SEED[:2]:
        for name, design in DESIGNS.items():
            result = Simulator(scenario.load, design, calls=calls, drain_sec=DRAIN_SEC).run()
            wait = worker_wait_usd_per_million(
                args.job_seconds,
                batch_size=design.batch_size,
                batch_concurrency=design.batch_concurrency,
                memory_mb=design.worker_memory_mb,
            )
            print(
                json.dumps(
                    {
                        "scenario": scenario.name,
                        "design": name,
                        "job_seconds": args.job_seconds,
                        "start_lag_sec": result.start_lag,
                        "burst_dispatched_within_sec": result.burst_dispatched_within_sec,
                        "not_started": round(result.unstarted),
                        "worker_concurrency_peak": result.peak_concurrency["worker"],
                        "worker_wait_usd_per_million": round(wait, 2),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
