"""What `takt local` prints: one banner (URL, data folder, egress), no environment dump and no
credentials, then one line per event, each in JSON with an RFC 3339 UTC timestamp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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

    banner, events = lines[:BANNER_LINES], lines[BANNER_LINES:]
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
