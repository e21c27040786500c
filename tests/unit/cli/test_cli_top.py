"""`takt top`'s screen, drawn from one stats document."""

from __future__ import annotations

import json
from typing import Any

import pytest

from takt_cli.commands.main import main
from takt_cli.commands.top import render, sparkline
from tests.unit.cli.conftest import FakeApi


def minute(i: int, **counts: Any) -> dict[str, Any]:
    base = {
        "minute": f"2026-03-02T11:{i:02d}:00Z",
        "dispatched": 0,
        "succeeded": 0,
        "failed": 0,
        "dead": 0,
        "retried": 0,
        "skipped": 0,
        "lag_p50_ms": None,
        "lag_p99_ms": None,
        "lag_max_ms": None,
        "dispatch_lag_max_ms": None,
    }
    return {**base, **counts}


def stats() -> dict[str, Any]:
    minutes = [minute(i) for i in range(60)]
    minutes[58] = minute(58, succeeded=40, retried=2, failed=1, dead=1, lag_p50_ms=12.0,
                         lag_p99_ms=230.0, lag_max_ms=400.0)  # fmt: skip
    minutes[59] = minute(59, succeeded=5)
    counted = ("dispatched", "succeeded", "failed", "dead", "retried", "skipped")
    watchdog = ("lease_expired", "pending_resent", "retries_released", "stale_reports_fenced")
    return {
        "generated_at": "2026-03-02T11:59:30Z",
        "window_minutes": 60,
        "metrics_since": "2026-03-02T11:00:00Z",
        "jobs": {"active": 7, "paused": 2, "completed": 1, "total": 10, "complete": True},
        "failing_jobs": [
            {
                "id": "job_bad",
                "name": "nightly",
                "status": "active",
                "last_outcome": "dead",
                "last_run_at": "2026-03-02T11:58:10Z",
                "last_execution_id": "job_bad.x",
            }
        ],
        "dead_executions": 3,
        "failed_executions": 1,
        "lanes": [
            {"lane": "high", "waiting": 0, "in_flight": 1, "delayed": 0, "dead_letter": 0},
            {"lane": "default", "waiting": 12, "in_flight": 4, "delayed": 3, "dead_letter": 2},
        ],
        "minutes": minutes,
        "totals": {**dict.fromkeys(counted, 0), **dict.fromkeys(watchdog, 0), "lease_expired": 4},
    }


def test_the_screen_shows_the_last_full_minute_and_the_hour() -> None:
    screen = render(stats(), "http://127.0.0.1:8080")

    assert (
        "executions ended: 5 this minute, 42 last minute (40 succeeded, 1 failed, 1 dead), "
        "47 in the last hour"
    ) in screen
    assert "attempts retried: 2 last minute, 2 in the last hour" in screen
    assert "lag p99    230 ms (p50 12 ms, max 400 ms)" in screen
    assert "7 active, 2 paused, 1 completed" in screen
    assert "4 leases expired" in screen
    assert "3 dead, 1 failed executions now (this tenant, all kept history)" in screen


def test_the_last_minutes_breakdown_adds_up_to_its_runs_and_retries_are_counted_apart() -> None:
    screen = render(stats(), "http://127.0.0.1:8080")
    runs = next(line for line in screen.splitlines() if line.startswith("runs"))
    last_minute, breakdown = runs.split(" last minute (")[0], runs.split("(")[1].split(")")[0]
    parts = [int(part.split()[0]) for part in breakdown.split(", ")]

    assert sum(parts) == int(last_minute.split()[-1]) == 42, (
        "a counter's breakdown adds up to it (runs are executions that ended, one each; "
        f"retried attempts are counted apart): {runs!r}"
    )


def test_after_a_restart_the_hours_counts_say_since_when_they_count() -> None:
    restarted = {**stats(), "metrics_since": "2026-03-02T11:52:10Z"}

    screen = render(restarted, "http://127.0.0.1:8080")

    assert "47 since 11:52 UTC (metrics began then)" in screen, (
        "the hour's counts name the window they cover: after a restart of takt local they "
        "count from it, and say so rather than reading as a quiet hour"
    )
    assert "in the last hour" not in screen


def test_the_screen_has_a_row_per_lane_and_per_failing_job() -> None:
    lines = render(stats(), "http://127.0.0.1:8080").splitlines()

    assert ["default", "12", "4", "3", "2"] in [line.split() for line in lines]
    assert any(line.split()[:3] == ["job_bad", "nightly", "dead"] for line in lines)


def test_a_sparkline_scales_to_the_largest_value_and_blanks_empty_minutes() -> None:
    assert sparkline([0, None, 4, 8]) == "  ▄█"
    assert sparkline([None, 0]) == "  "


def test_top_once_prints_one_screen(fake_api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    fake_api.answers["/v1/stats"] = stats()

    code = main(["--endpoint", fake_api.url, "top", "--once"])

    out = capsys.readouterr().out
    assert code == 0
    assert out.count("takt top") == 1
    assert [r.target for r in fake_api.received] == ["/v1/stats"]


def test_top_once_as_json_is_the_stats_document(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/stats"] = stats()

    assert main(["--endpoint", fake_api.url, "-o", "json", "top", "--once"]) == 0

    assert json.loads(capsys.readouterr().out) == stats()
