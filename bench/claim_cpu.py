"""The claimer's CPU per claimed item, moto's own CPU left out.

    .venv/bin/python bench/claim_cpu.py --items 300 --rounds 3

The capacity model prices the claimer by its CPU per item (`CallProfile.claimer_cpu_ms_per_item`
in takt_cli.capacity.model): this measures it. moto's server runs in a child process
(`takt_cli.local.runtime.MotoProcess`), so the CPU this process spends during a claim is the
claimer's alone: its own thread's and its write threads' (`time.process_time`). Each round stores
`--items` jobs of each kind in `--kinds` (one-off, or recurring every hour, which also indexes the
next occurrence), all due in the same second and in one (minute bucket, shard) partition, and
times one `Claimer.claim` of that partition with the shipped settings, except that it takes
everything due (`claim_max_items` off, as the capacity model's claims do). Each claim must
dispatch every item, or the run fails. It prints, per kind, the CPU ms per item (median of the
rounds, and each round), the AWS calls per item, and the load average before and after.

moto's server closes the connection after every answer, where DynamoDB and SQS keep it open, so
each call here also pays for a new TCP connection: the figure is an upper bound of what the same
claim spends in AWS (where TLS adds a little back).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT), str(ROOT / "cli")]

from takt.clock import ManualClock  # noqa: E402
from takt.config import Settings  # noqa: E402
from takt.dispatch.claimer import Claimer  # noqa: E402
from takt.store.due import minute_of  # noqa: E402
from takt.wiring import Services, build_services  # noqa: E402
from takt_cli.local.provision import provision  # noqa: E402
from takt_cli.local.runtime import FAKE_CREDENTIALS, MotoProcess, free_port  # noqa: E402
from tests.support.jobs import TENANT, job_id_in_shard, make_job, store_job  # noqa: E402

SHARD = 0
KINDS = ("one-off", "recurring")


class CallCount:
    """Counts the AWS calls a client makes (one integer added per call: no CPU worth timing)."""

    def __init__(self) -> None:
        self.calls = 0

    def attach(self, client: Any) -> None:
        client.meta.events.register("after-call", self._count)

    def _count(self, **_: Any) -> None:
        self.calls += 1


@contextmanager
def moto_on_loopback() -> Iterator[str]:
    """A moto server of its own on a free loopback port, with fake credentials: its endpoint,
    stopped on the way out."""
    os.environ.update(FAKE_CREDENTIALS)
    port = free_port()
    moto = MotoProcess("127.0.0.1", port)
    moto.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        moto.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    args = parser.parse_args()

    with moto_on_loopback() as endpoint:
        settings = Settings(aws_endpoint_url=endpoint, due_shards=4, claim_max_items=None)
        env = provision(build_services(settings).clients, settings, prefix="bench")
        settings = settings.model_copy(update={"lane_urls": json.loads(env["TAKT_LANE_URLS"])})
        cpu: dict[str, list[float]] = {kind: [] for kind in args.kinds}
        calls: dict[str, list[float]] = {kind: [] for kind in args.kinds}
        load = [os.getloadavg()[0]]
        due = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
        for _ in range(args.rounds):
            for kind in args.kinds:
                due += timedelta(minutes=2)
                spent, made = _claim_cpu(settings, kind, args.items, due)
                cpu[kind].append(spent * 1000 / args.items)
                calls[kind].append(made / args.items)
            load.append(os.getloadavg()[0])
    report = {
        "items": args.items,
        "rounds": args.rounds,
        "claimer_threads": settings.claimer_threads,
        "cpu_ms_per_item_median": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
        "cpu_ms_per_item_rounds": {k: [round(x, 2) for x in v] for k, v in cpu.items()},
        "aws_calls_per_item": {k: round(statistics.median(v), 2) for k, v in calls.items()},
        "load_average_1min": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=2))


def _claim_cpu(settings: Settings, kind: str, items: int, due: datetime) -> tuple[float, int]:
    """The CPU seconds of one claim of `items` jobs of `kind` due at `due`, and its AWS calls."""
    clock = ManualClock(due - timedelta(seconds=40))
    svc = build_services(settings, clock)
    for _ in range(items):
        job_id = job_id_in_shard(TENANT, SHARD, settings.due_shards)
        interval = "1h" if kind == "recurring" else None
        job = make_job(now=clock.now(), next_run_time=due, job_id=job_id, interval=interval)
        store_job(svc, job, clock.now())
    claimer, count = _claimer(svc)
    start = time.process_time()
    result = claimer.claim(minute_of(due), SHARD, due)
    spent = time.process_time() - start
    if result.dispatched != items:
        raise SystemExit(f"claim dispatched {result.dispatched} of {items} {kind} items")
    return spent, count.calls


def _claimer(svc: Services) -> tuple[Claimer, CallCount]:
    """The claimer as the claimer function wires it (`takt.wiring.claimer`), its calls counted."""
    claimer = svc.claimer
    count = CallCount()
    count.attach(svc.clients.dynamodb)
    count.attach(svc.clients.sqs)
    return claimer, count


if __name__ == "__main__":
    main()
