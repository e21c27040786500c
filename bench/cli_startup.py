"""CPU time of the `takt` CLI's start-up: `takt --help` and each command's own `--help`.

    .venv/bin/python bench/cli_startup.py [--runs 10]

Each command is run `--runs` times as a child process (after one warm-up run, not counted); a
run's CPU is the user plus system seconds the operating system accounted to that finished child.
It prints min, median and max per command, as JSON. The CLI imports a command's module only when
that command runs, and boto3 only when a request is signed, so `takt --help` pays for click alone
(the issue's bound: 0.2 s; a held-out check: 0.5 s). The numbers are this machine's, under
whatever else it runs: quote the median with the load average printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

TAKT = Path(sys.executable).with_name("takt")
COMMANDS = (
    ("--help",),
    ("jobs", "--help"),
    ("executions", "--help"),
    ("local", "--help"),
    ("receive", "--help"),
)


def cpu_of(args: tuple[str, ...]) -> float:
    """User plus system seconds of one run of `takt args`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([str(TAKT), *args], check=True, stdout=subprocess.DEVNULL)  # noqa: S603 (fixed argv)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    report: dict[str, object] = {"runs": runs, "load_average": os.getloadavg()}
    for args in COMMANDS:
        cpu_of(args)
        seconds = sorted(cpu_of(args) for _ in range(runs))
        report["takt " + " ".join(args)] = {
            "cpu_sec_min": round(seconds[0], 3),
            "cpu_sec_median": round(statistics.median(seconds), 3),
            "cpu_sec_max": round(seconds[-1], 3),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
