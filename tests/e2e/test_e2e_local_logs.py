"""What `takt local` prints: one banner (URL, data folder, egress), no environment dump and no
credentials, then one line per event, each in JSON with an RFC 3339 UTC timestamp, and one line
saying it stops the moment it is told to."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from takt_cli.commands.local import STOPPING
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver, Reply

pytestmark = pytest.mark.e2e

BANNER_LINES = 5


def test_start_up_is_one_banner_then_one_json_line_per_event(
    tmp_path: Path, receiver: Receiver
) -> None:
    runtime = LocalTakt.start(tmp_path / "takt-local.log", "--log-level", "INFO")
    try:
        job = runtime.create_job({"interval": "1h", "target": receiver.path(then=Reply(404))})
        execution_id = runtime.request("POST", f"/v1/jobs/{job['id']}/trigger").body["id"]
        poll(
            lambda: runtime.execution(execution_id)["state"],
            lambda state: state == "failed",
            30,
            "the failed execution",
        )
    finally:
        assert runtime.stop() == 0
    lines = (tmp_path / "takt-local.log").read_text().splitlines()

    banner, events, last = lines[:BANNER_LINES], lines[BANNER_LINES:-1], lines[-1]
    assert last == STOPPING
    assert banner[0].startswith(f"takt local on {runtime.url}: ")
    assert [line.split(":")[0].strip() for line in banner[1:]] == [
        "data",
        "webhooks",
        "aws",
        "egress",
    ]
    assert "testing" not in "\n".join(lines)  # moto's fake credentials
    records = [json.loads(line) for line in events]  # every event line is one JSON record
    assert all(r["timestamp"].endswith("Z") and "T" in r["timestamp"] for r in records)
    processed = [
        r
        for r in records
        if r["message"] == "execution processed" and r.get("execution_id") == execution_id
    ]
    assert len(processed) == 1


# Far longer than a stop takes: the exit is asserted, and its time reported, not asserted.
EXIT_DEADLINE_SEC = 30
# A target that answers only after this long holds an execution running through the stop.
HELD_SEC = 25


def test_ctrl_c_says_at_once_it_is_stopping_and_exits_without_waiting_for_a_running_target(
    tmp_path: Path, receiver: Receiver, record_property: Callable[[str, object], None]
) -> None:
    log = tmp_path / "takt-local.log"
    runtime = LocalTakt.start(log)
    try:
        held = receiver.path(then=Reply(200, delay_sec=HELD_SEC))
        job = runtime.create_job({"interval": "1h", "target": held})
        runtime.request("POST", f"/v1/jobs/{job['id']}/trigger")
        assert len(receiver.wait_for(held, 1, 30)) == 1, "the execution never reached its target"
        sent = time.monotonic()
        runtime.process.send_signal(signal.SIGINT)
        try:
            code = runtime.process.wait(timeout=EXIT_DEADLINE_SEC)
        except subprocess.TimeoutExpired:
            code = None
        took = time.monotonic() - sent
    finally:
        runtime.stop()
    record_property("ctrl_c_exit_sec", round(took, 2))
    printed = log.read_text().splitlines()

    assert code == 0, f"rule: Ctrl-C stops takt local cleanly (exit {code} after {took:.1f}s)"
    assert STOPPING in printed, f"rule: Ctrl-C is answered with one line at once: {printed[-5:]}"
    after = printed[printed.index(STOPPING) + 1 :]
    assert after == [], f"rule: a stop cut short prints no errors of its calls: {after[:5]}"
