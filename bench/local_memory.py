"""Resident memory of `takt local` under a steady read load: RSS before and after N listings.

    .venv/bin/python bench/local_memory.py --jobs 200 --listings 400 --warmup 20

It runs the local runtime in this process (moto's server on a thread, the scheduler, workers and the
watchdog, as `takt local` does), stores `--jobs` idle jobs through the job service, then lists them
`--listings` times over the local API's HTTP (`GET /v1/jobs?limit=200`, every page), as a console or
a script polling it would. It prints, as JSON, this process's RSS (VmRSS) after the jobs are stored
and `--warmup` listings are made (the first requests fill caches that then stay as they are: moto's
per-class method names, the allocator's arenas), after every tenth of the listings, and at the end,
with the growth per listing and the load average. The listings stop at `--timeout` seconds, whatever
their count (the report says how many were made). A read changes nothing stored, so the RSS should
stay flat: moto's server once kept every item a query copied (`takt_cli.local.moto_retention`). The
numbers are this machine's, under whatever else it runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port

# Far from any run: stored jobs must be in the tables, never due.
IDLE_SCHEDULE = "0 0 1 1 *"
TARGET = "http://127.0.0.1:9/never-called"


def rss_mb() -> float:
    """This process's resident set size (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS in /proc/self/status")


def list_all(url: str) -> int:
    """List every job, page by page, as a client would; how many were listed."""
    listed = 0
    cursor = ""
    while True:
        query = "limit=200" + (f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(f"{url}/v1/jobs?{query}", timeout=30) as answer:  # noqa: S310 (loopback)
            page: dict[str, Any] = json.load(answer)
        listed += len(page["items"])
        cursor = page.get("next_cursor") or ""
        if not cursor:
            return listed


def run(jobs: int, listings: int, warmup: int, timeout_sec: float) -> dict[str, Any]:
    runtime = LocalRuntime(RuntimeOptions(port=free_port(), console_dir=None))
    runtime.start()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    try:
        assert runtime.services is not None
        service = JobService(runtime.services.api)
        tenant = runtime.options.tenant
        for i in range(jobs):
            service.create(
                tenant, JobCreate(name=f"idle-{i}", schedule=IDLE_SCHEDULE, target=TARGET), None
            )
        listed = list_all(runtime.url)
        for _ in range(warmup):
            list_all(runtime.url)
        gc.collect()
        before = rss_mb()
        samples: list[float] = []
        every = max(1, listings // 10)
        deadline = time.monotonic() + timeout_sec
        start = time.monotonic()
        made = 0
        while made < listings and time.monotonic() < deadline:
            list_all(runtime.url)
            made += 1
            if made % every == 0:
                gc.collect()
                samples.append(rss_mb())
        gc.collect()
        after = rss_mb()
        return {
            "jobs": jobs,
            "jobs_listed_each_time": listed,
            "warmup_listings": warmup,
            "listings_asked": listings,
            "listings_made": made,
            "listings_sec": round(time.monotonic() - start, 1),
            "rss_mb_before": before,
            "rss_mb_samples": samples,
            "rss_mb_after": after,
            "rss_mb_growth": round(after - before, 1),
            "rss_kb_per_listing": round((after - before) * 1024 / made, 1) if made else None,
            "load_average": [round(load, 2) for load in os.getloadavg()],
        }
    finally:
        runtime.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--listings", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    print(json.dumps(run(args.jobs, args.listings, args.warmup, args.timeout), indent=2))


if __name__ == "__main__":
    main()
