"""The ticker's CPU per probe of a due partition, with and without the claim cursor, moto's own
CPU left out.

    .venv/bin/python bench/probe_cpu.py --rounds 5

Every tick of the scheduler function probes each swept (minute, shard) partition with
`DueStore.has_due` before it invokes a claimer for it: the seed sweeps two minutes of 64 shards,
128 probes a second. Without the cursor a probe is one query; with it (`Settings.due_cursor`),
the late items and the cursor, then one item past the cursor: two. This measures what that costs
the scheduler's CPU. moto's server runs in a child process (`takt_cli.local.runtime.MotoProcess`),
so the CPU this process spends is the probes' alone (`time.process_time`). Each partition holds
what a busy minute's does mid-minute: `--passed` items already claimed (deleted without the
cursor; passed by it, with it) and `--ahead` items due later in the minute. It prints, each way,
the CPU ms per probe (median of the rounds, and each round), the DynamoDB calls per probe, and
the load average before and after.
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
sys.path[:0] = [str(ROOT / "layers"), str(ROOT), str(ROOT / "cli")]

from bench.claim_cpu import CallCount, moto_on_loopback  # noqa: E402
from takt.config import Settings  # noqa: E402
from takt.store.due import DueStore, minute_of, shard_of  # noqa: E402
from takt.wiring import build_services  # noqa: E402
from takt.wiring.stores import due_store  # noqa: E402
from takt_cli.local.provision import provision  # noqa: E402

SHARDS = 64
TENANT = "bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--passed", type=int, default=20)
    parser.add_argument("--ahead", type=int, default=5)
    args = parser.parse_args()

    with moto_on_loopback() as endpoint:
        base = Settings(aws_endpoint_url=endpoint, due_shards=SHARDS)
        provision(build_services(base).clients, base, prefix="bench")
        cpu: dict[str, list[float]] = {}
        calls: dict[str, float] = {}
        load = [os.getloadavg()[0]]
        start = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
        for way, cursor in (("deletes", False), ("cursor", True)):
            settings = base.model_copy(
                update={"due_table": f"bench-due-{way}", "due_cursor": cursor}
            )
            clients = build_services(settings).clients
            provision(clients, settings, prefix=f"bench-{way}")
            due = due_store(settings, clients.dynamodb)
            now = _fill(due, start, args.passed, args.ahead)
            counted = CallCount()
            counted.attach(due._db)
            cpu[way] = [_probe_all(due, now) * 1000 / (2 * SHARDS) for _ in range(args.rounds)]
            calls[way] = counted.calls / (args.rounds * 2 * SHARDS)
            load.append(os.getloadavg()[0])
    report = {
        "partitions": 2 * SHARDS,
        "rounds": args.rounds,
        "cpu_ms_per_probe_median": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
        "cpu_ms_per_probe_rounds": {k: [round(x, 3) for x in v] for k, v in cpu.items()},
        "dynamodb_calls_per_probe": {k: round(v, 2) for k, v in calls.items()},
        "load_average_1min": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=2))


def _fill(due: DueStore, start: datetime, passed: int, ahead: int) -> datetime:
    """A tick's two swept minutes, mid-minute (now): the previous minute with `passed + ahead`
    items, every one claimed; the current one with `passed` items claimed and `ahead` due later
    in it. Each partition's items are claimed as one claim finishes them (the cursor moves past
    them, or each is deleted); now."""
    previous, current = minute_of(start), minute_of(start) + timedelta(minutes=1)
    now = current + timedelta(seconds=30)
    written = start - timedelta(hours=1)
    ids: dict[int, list[str]] = {shard: [] for shard in range(SHARDS)}
    job = 0
    while any(len(held) < passed + ahead for held in ids.values()):
        job_id = f"job{job:08d}"
        job += 1
        held = ids[shard_of(TENANT, job_id, SHARDS)]
        if len(held) < passed + ahead:
            held.append(job_id)
    for minute, claimed in ((previous, passed + ahead), (current, passed)):
        for shard, job_ids in ids.items():
            # Claimed items in the minute's first 30 s, the rest after now.
            offsets = [
                i * 30 / claimed if i < claimed else 40 + i % 20 for i in range(len(job_ids))
            ]
            due.put_many(
                [
                    (TENANT, j, minute + timedelta(seconds=o))
                    for j, o in zip(job_ids, offsets, strict=True)
                ],
                written,
            )
            read = due.read_due(minute, shard, now)
            for item in due.settle(read, read.items):
                due.delete_if_unchanged(item)
    return now


def _minutes(now: datetime) -> list[datetime]:
    return [minute_of(now) - timedelta(minutes=1), minute_of(now)]


def _probe_all(due: DueStore, now: datetime) -> float:
    """The CPU seconds one tick's probes of every partition take."""
    begin = time.process_time()
    for minute in _minutes(now):
        for shard in range(SHARDS):
            due.has_due(minute, shard, now)
    return time.process_time() - begin


if __name__ == "__main__":
    main()
