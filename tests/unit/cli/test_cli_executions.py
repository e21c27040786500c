"""`takt executions`'s tables: what a re-run's attempt column says."""

from __future__ import annotations

from typing import Any

import pytest

from takt_cli.commands.main import main
from tests.unit.cli.conftest import FakeApi

EXECUTION_ID = "job_a.20260302T120000000Z"


def execution(**fields: Any) -> dict[str, Any]:
    base = {
        "id": EXECUTION_ID,
        "job_id": "job_a",
        "state": "dead",
        "attempt": 9,
        "max_attempts": 9,
        "rerun": 2,
        "rerun_attempt": 3,
        "rerun_max_attempts": 3,
        "attempt_label": "re-run 2, attempt 3 of 3",
        "scheduled_time": "2026-03-02T12:00:00Z",
        "lag_ms": 12,
        "error": "HTTP 500",
        "attempts": [],
    }
    return {**base, **fields}


def test_a_re_runs_attempt_reads_against_its_own_budget_in_the_table(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers[f"/v1/executions/{EXECUTION_ID}"] = execution()

    code = main(["--endpoint", fake_api.url, "executions", "get", EXECUTION_ID])

    row = capsys.readouterr().out.splitlines()[1]
    assert code == 0
    assert "dead   3 (re-run 2)" in row, (
        "a re-run's attempts read against its own budget (max_attempts 3), not the fence's "
        f"attempt 9: {row!r}"
    )


def test_a_first_runs_attempt_is_its_number(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    first = execution(state="succeeded", attempt=2, rerun=0, rerun_attempt=2, error=None)
    fake_api.answers[f"/v1/executions/{EXECUTION_ID}"] = first

    main(["--endpoint", fake_api.url, "executions", "get", EXECUTION_ID])

    assert capsys.readouterr().out.splitlines()[1].split()[1:3] == ["succeeded", "2"]


def test_executions_get_prints_a_container_attempts_log_stream_link(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    link = "https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#logsV2:x"
    attempt = {"attempt": 1, "outcome": "failed", "error": "exit code 3", "logs": link}
    fake_api.answers[f"/v1/executions/{EXECUTION_ID}"] = execution(attempts=[attempt])

    main(["--endpoint", fake_api.url, "executions", "get", EXECUTION_ID])

    out = capsys.readouterr().out
    assert f"attempt 1 logs: {link}" in out.splitlines(), (
        f"a container target's log stream is linked from the execution: {out!r}"
    )
