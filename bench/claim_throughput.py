"""Items per second one claim dispatches, with its phases' writes 1, 8 or 32 at a time.

    .venv/bin/python bench/claim_throughput.py --items 300 --rounds 3

It starts moto's server in this process (with the local runtime's speedups), stores `--items` one-
off jobs all due in the same second and all in one (minute bucket, shard) partition, and times one
`Claimer.claim` of that partition, taking everything due (`claim_max_items` off, as the capacity
model's claims do: with the shipped fair claims of 10 it would dispatch 10); then again with fresh
jobs, for each thread count in `--threads`, round after round (so a busy machine slows every setting
alike). Each claim must dispatch every item, or the run fails. It prints items per second per
setting (median of the rounds) and the load average beside them: on this shared 2-core host moto's
own CPU is the floor, so the figures show what the phases' parallel writes save in waiting, not what
DynamoDB does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT)]

from moto.server import ThreadedMotoServer  # noqa: E402

from takt.clock import ManualClock  # noqa: E402
from takt.config import Settings  # noqa: E402
from takt.dispatch.claimer import Claimer, ClaimerSettings  # noqa: E402
from takt.store.due import minute_of  # noqa: E402
from takt.wiring import build_services  # noqa: E402
from takt_cli.local import moto_speedups  # noqa: E402
from takt_cli.local.provision import provision  # noqa: E402
from takt_cli.local.runtime import FAKE_CREDENTIALS, free_port  # noqa: E402
from tests.support.jobs import TENANT, job_id_in_shard, make_job, store_job  # noqa: E402

SHARD = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args()

    os.environ.update(FAKE_CREDENTIALS)
    moto_speedups.apply()
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        settings = Settings(
            aws_endpoint_url=f"http://127.0.0.1:{port}", due_shards=4, claim_max_items=None
        )
        env = provision(build_services(settings).clients, settings, prefix="bench")
        settings = settings.model_copy(update={"lane_urls": json.loads(env["TAKT_LANE_URLS"])})
        rates: dict[int, list[float]] = {threads: [] for threads in args.threads}
        load = [os.getloadavg()[0]]
        due = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
        for _ in range(args.rounds):
            for threads in args.threads:
                due += timedelta(minutes=2)
                rates[threads].append(_claim_rate(settings, threads, args.items, due))
            load.append(os.getloadavg()[0])
    finally:
        server.stop()
    report = {
        "items": args.items,
        "rounds": args.rounds,
        "items_per_sec_median": {t: round(statistics.median(r), 1) for t, r in rates.items()},
        "items_per_sec_rounds": {t: [round(x, 1) for x in r] for t, r in rates.items()},
        "load_average_1min": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=2))


def _claim_rate(settings: Settings, threads: int, items: int, due: datetime) -> float:
    """Items per second of one claim of `items` jobs due at `due`, with `threads` writers."""
    clock = ManualClock(due - timedelta(seconds=40))
    svc = build_services(settings.model_copy(update={"claimer_threads": threads}), clock)
    for _ in range(items):
        job_id = job_id_in_shard(TENANT, SHARD, settings.due_shards)
        store_job(svc, make_job(now=clock.now(), next_run_time=due, job_id=job_id), clock.now())
    claimer = Claimer(
        ClaimerSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes
    )
    start = time.perf_counter()
    result = claimer.claim(minute_of(due), SHARD, due)
    spent = time.perf_counter() - start
    if result.dispatched != items:
        raise SystemExit(f"claim dispatched {result.dispatched} of {items}")
    return items / spent


if __name__ == "__main__":
    main()
