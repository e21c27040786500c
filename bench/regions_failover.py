"""Issue 27's first "done when", measured: how long after a kill -9 of the lease holder's process
the other region dispatches, with the region lease as shipped (20 s, renewed every 5 s, margin
5 s), on `takt local --regions us-east-1,us-east-2`.

    .venv/bin/python bench/regions_failover.py --runs 2

Each run starts the two regions, creates `--jobs` jobs due every second (catch-up `all`) through
us-east-1, waits for us-east-1 to make `--calls` calls, kills its process with SIGKILL, and
times the first call from us-east-2. The verdicts come from outside takt: a loopback receiver
tells each call's region from the process that made it (tests/chaos/regions_rig.py), and every
occurrence due until `--observe` seconds after that first call must have been called, never
under two execution ids. It prints one JSON line per run and exits 1 if a run lost an
occurrence, called one under two ids, or took longer than the issue's 60 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers"), str(ROOT / "cli")]

from tests.chaos.regions_rig import CallerReceiver, judge_calls  # noqa: E402
from tests.e2e.harness import poll  # noqa: E402
from tests.e2e.regions_harness import RegionsRun  # noqa: E402

EAST1, EAST2 = "us-east-1", "us-east-2"
RTO_GOAL_SEC = 60


def one_run(jobs: int, calls: int, observe_sec: float, log: Path) -> dict[str, object]:
    with CallerReceiver() as receiver:
        run = RegionsRun.start(log, f"{EAST1},{EAST2}")
        try:
            receiver.regions = {region.pid: region.name for region in run.regions}
            poll(run.lease, lambda lease: lease is not None, 60, "the first region lease")
            east1 = run.region(EAST1)
            ids = [
                east1.api.create_job({"interval": "1s", "catchup": "all", "target": receiver.url})[
                    "id"
                ]
                for _ in range(jobs)
            ]
            poll(
                lambda: [c for c in receiver.calls() if c.region == EAST1],
                lambda made: len(made) >= calls,
                90,
                f"{EAST1} dispatching",
            )
            killed_at = time.monotonic()
            os.kill(east1.pid, signal.SIGKILL)
            first = min(
                poll(
                    lambda: [c for c in receiver.calls() if c.region == EAST2 and c.at > killed_at],
                    bool,
                    120,
                    f"{EAST2} dispatching",
                ),
                key=lambda call: call.at,
            )
            poll(lambda: time.monotonic() - first.at, lambda s: s > observe_sec, 60, "observe")
            made = receiver.calls()
            until = max(c.scheduled for c in made) - timedelta(seconds=3)
            windows = {j: (min(c.scheduled for c in made if c.job_id == j), until) for j in ids}
            with contextlib.suppress(AssertionError):  # judged below
                poll(
                    lambda: judge_calls(receiver.calls(), windows).lost,
                    lambda lost: not lost,
                    60,
                    "every occurrence called",
                )
            verdict = judge_calls(receiver.calls(), windows)
            return {
                "rto_sec": round(first.at - killed_at, 1),
                "occurrences": verdict.occurrences,
                "lost": len(verdict.lost),
                "two_ids": len(verdict.two_ids),
                "called_twice_same_id": verdict.duplicates,
                "calls_by_region": dict(Counter(c.region for c in receiver.calls())),
                "lease_after": run.lease(),
                "load_average": os.getloadavg(),
            }
        finally:
            run.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=15, help="us-east-1's calls before the kill")
    parser.add_argument("--observe", type=float, default=20.0, help="seconds after the first call")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        for index in range(args.runs):
            report = one_run(args.jobs, args.calls, args.observe, Path(folder) / f"{index}.log")
            print(json.dumps(report), flush=True)
            rto = report["rto_sec"]
            failed |= bool(report["lost"] or report["two_ids"]) or (
                isinstance(rto, float) and rto >= RTO_GOAL_SEC
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
