"""What `takt local` serves besides the API: the console's files at `/`, the stats the console
and `takt top` read (fed by the handlers' own metrics), and `takt top` itself."""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3

from takt_cli.commands.main import main
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver

pytestmark = pytest.mark.e2e


def fetch(takt_local: LocalTakt, path: str) -> urllib3.BaseHTTPResponse:
    return urllib3.request("GET", takt_local.url + path, retries=False, timeout=10)


def test_the_console_is_served_at_the_root(takt_local: LocalTakt) -> None:
    page = fetch(takt_local, "/")
    module = fetch(takt_local, "/js/main.js")

    assert page.status == 200
    assert page.headers["content-type"].startswith("text/html")
    assert b'<script type="module" src="js/main.js">' in page.data
    assert module.status == 200
    assert module.headers["content-type"].startswith("text/javascript")


def test_paths_outside_the_console_and_unknown_files_are_404(takt_local: LocalTakt) -> None:
    assert fetch(takt_local, "/../pyproject.toml").status == 404
    assert fetch(takt_local, "/%2e%2e/pyproject.toml").status == 404
    assert fetch(takt_local, "/no-such-file.js").status == 404


def test_everything_under_v1_is_still_the_api(takt_local: LocalTakt) -> None:
    answer = takt_local.request("GET", "/v1/no-such-route")

    assert answer.status == 404
    assert answer.headers["content-type"] == "application/problem+json"


def test_a_run_shows_in_the_stats_within_seconds(takt_local: LocalTakt, receiver: Receiver) -> None:
    before = takt_local.request("GET", "/v1/stats").body["totals"]["succeeded"]
    job = takt_local.create_job({"interval": "1h", "target": receiver.path()})

    takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger")

    stats: dict[str, Any] = poll(
        lambda: takt_local.request("GET", "/v1/stats").body,
        lambda body: body["totals"]["succeeded"] > before,
        30,
        "a success counted in /v1/stats",
    )
    latest = [m for m in stats["minutes"] if m["lag_p99_ms"] is not None]
    assert latest, "a run's ScheduleLag reached the stats"
    assert stats["jobs"]["active"] >= 1


def test_top_once_shows_lanes_and_runs(
    takt_local: LocalTakt, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--endpoint", takt_local.url, "top", "--once"])

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("takt top")
    lanes = [line.split()[0] for line in out.splitlines() if line.split()[:1]]
    assert {"high", "default", "low"} <= set(lanes)


def test_top_once_as_json_is_the_stats_route(
    takt_local: LocalTakt, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--endpoint", takt_local.url, "-o", "json", "top", "--once"])

    stats = json.loads(capsys.readouterr().out)
    assert code == 0
    assert len(stats["minutes"]) == stats["window_minutes"] == 60


def test_the_dead_letter_listing_answers(
    takt_local: LocalTakt, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--endpoint", takt_local.url, "-o", "json", "executions", "dead"])

    page = json.loads(capsys.readouterr().out)
    assert code == 0
    assert all(item["state"] == "dead" for item in page["items"])
