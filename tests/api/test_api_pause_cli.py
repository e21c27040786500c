"""`takt jobs pause --until` and `takt jobs resume` against the real API."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from takt.models.ids import format_time, parse_time
from takt_cli.commands.main import main
from tests.api.harness import Api
from tests.api.served import served


def test_pause_until_moves_the_next_run_and_resume_ends_the_pause(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    job = api.created_job({"interval": "1h", "target": "https://svc/hook"})
    now = api.svc.clock.now()
    until = format_time(now + timedelta(days=3))
    with served(api) as endpoint:
        paused_code = main(["--endpoint", endpoint, "-o", "json", "jobs", "pause", job["id"],
                            "--until", until])  # fmt: skip
        paused = json.loads(capsys.readouterr().out)
        resumed_code = main(["--endpoint", endpoint, "-o", "json", "jobs", "resume", job["id"]])
        resumed = json.loads(capsys.readouterr().out)

    assert (paused_code, resumed_code) == (0, 0)
    assert (paused["status"], paused["pause_until"], paused["next_run_time"]) == (
        "active",
        until,
        until,
    )
    assert resumed["pause_until"] is None
    assert parse_time(resumed["next_run_time"]) == now + timedelta(hours=1)
