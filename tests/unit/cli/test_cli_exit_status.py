"""The installed `takt` command exits with the status its commands return, so a script can tell
a failure: `takt_cli.commands.main.main` returns the status rather than exiting, and the console
script's entry point must pass it on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TAKT = str(Path(sys.executable).parent / "takt")


def _takt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TAKT, *args], capture_output=True, text=True, check=False, timeout=60)


def test_an_error_exits_non_zero_with_one_line() -> None:
    done = _takt("schedule", "preview", "--cron", "0 25 * * *")
    assert done.returncode == 1
    assert done.stderr.startswith("takt: error: ")
    assert done.stderr.count("\n") == 1


def test_a_usage_error_exits_two() -> None:
    assert _takt("schedule", "preview", "--no-such-option").returncode == 2


def test_success_exits_zero() -> None:
    done = _takt("schedule", "preview", "--cron", "0 6 * * *", "--after", "2027-01-01T00:00:00Z")
    assert (done.returncode, len(done.stdout.splitlines()) > 1) == (0, True)
