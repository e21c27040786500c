"""`takt schedule preview`, driven through click's test runner and through main()."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner, Result

from takt_cli.commands.context import CliContext, CliError
from takt_cli.commands.schedule import schedule

AFTER = "2026-10-01T12:00:00Z"


def _invoke(*args: str, output: str = "json", stdin: str | None = None) -> Result:
    return CliRunner().invoke(
        schedule, ["preview", *args], obj=CliContext(endpoint="", output=output), input=stdin
    )


def _json(*args: str) -> list[str]:
    result = _invoke(*args)
    assert result.exit_code == 0, result.exception
    parsed: list[str] = json.loads(result.stdout)
    return parsed


def _refusal(*args: str, stdin: str | None = None) -> str:
    result = _invoke(*args, stdin=stdin)
    assert result.exit_code != 0
    assert isinstance(result.exception, CliError)
    return result.exception.message


def test_cron_preview_prints_the_next_five_instants_as_json() -> None:
    assert _json("--cron", "0 * * * *", "--after", AFTER) == [
        "2026-10-01T13:00:00Z",
        "2026-10-01T14:00:00Z",
        "2026-10-01T15:00:00Z",
        "2026-10-01T16:00:00Z",
        "2026-10-01T17:00:00Z",
    ]


def test_cron_preview_in_a_time_zone_with_a_count() -> None:
    assert _json(
        "--cron", "0 6 * * *", "--tz", "Europe/Berlin", "--after", AFTER, "--count", "2"
    ) == [
        "2026-10-02T04:00:00Z",
        "2026-10-03T04:00:00Z",
    ]


def test_dst_options_reach_the_schedule() -> None:
    args = ("--cron", "30 2 * * *", "--tz", "America/New_York", "--after", "2026-03-07T12:00:00Z")
    assert _json(*args, "--count", "1") == ["2026-03-08T07:00:00Z"]
    assert _json(*args, "--count", "1", "--gap", "skip") == ["2026-03-09T06:30:00Z"]


def test_interval_preview_starts_one_interval_after_after() -> None:
    assert _json("--every", "90m", "--after", AFTER, "--count", "3") == [
        "2026-10-01T13:30:00Z",
        "2026-10-01T15:00:00Z",
        "2026-10-01T16:30:00Z",
    ]


def test_after_accepts_an_offset() -> None:
    assert _json("--cron", "0 * * * *", "--after", "2026-10-01T14:00:00+02:00", "--count", "1") == [
        "2026-10-01T13:00:00Z"
    ]


def test_after_defaults_to_now() -> None:
    before = datetime.now(UTC)
    instants = [datetime.fromisoformat(text) for text in _json("--cron", "* * * * * *")]
    assert len(instants) == 5
    assert instants[0] > before


def test_table_output_shows_local_time_beside_each_instant() -> None:
    result = _invoke(
        "--cron",
        "0 6 * * *",
        "--tz",
        "Europe/Berlin",
        "--after",
        AFTER,
        "--count",
        "2",
        output="table",
    )
    assert result.exit_code == 0, result.exception
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["UTC", "LOCAL"]
    assert lines[1].split() == ["2026-10-02T04:00:00Z", "2026-10-02T06:00:00+02:00", "CEST"]
    assert len(lines) == 3


def test_batch_answers_each_line_in_order() -> None:
    requests = [
        {"cron": "0 * * * *", "after": AFTER, "count": 2},
        {"cron": "0 6 * * *", "tz": "Europe/Berlin", "after": AFTER, "count": 1},
        {"every": "15m", "after": AFTER, "count": 2},
    ]
    stdin = "\n".join(json.dumps(request) for request in requests[:2]) + "\n\n"
    stdin += json.dumps(requests[2]) + "\n"
    result = _invoke("--batch", stdin=stdin)
    assert result.exit_code == 0, result.exception
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        ["2026-10-01T13:00:00Z", "2026-10-01T14:00:00Z"],
        ["2026-10-02T04:00:00Z"],
        ["2026-10-01T12:15:00Z", "2026-10-01T12:30:00Z"],
    ]


def test_batch_writes_one_compact_array_per_line_even_for_table_output() -> None:
    result = _invoke(
        "--batch", output="table", stdin=json.dumps({"cron": "@daily", "after": AFTER})
    )
    assert result.exit_code == 0, result.exception
    assert result.stdout.count("\n") == 1
    assert len(json.loads(result.stdout)) == 5


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"cron": "0 0 30 2 *"}', "line 2: invalid cron expression '0 0 30 2 *'"),
        ("not json", "line 2: not JSON"),
        ("[1, 2]", "line 2: expected a JSON object"),
        ('{"cron": "@daily", "count": 0}', "line 2: count must be"),
        ('{"cron": "@daily", "tz": "Mars/Base"}', "line 2: unknown time zone"),
        ('{"cron": "@daily", "after": "2026-10-01T12:00:00"}', "line 2: after must be"),
        ('{"cron": "@daily", "every": "1h"}', "line 2: give exactly one"),
        ('{"cron": "@daily", "colour": "red"}', "line 2: unknown field 'colour'"),
        ('{"cron": "@daily", "gap": "never"}', "line 2: unknown DST gap rule"),
    ],
)
def test_batch_names_the_bad_line(line: str, message: str) -> None:
    stdin = json.dumps({"cron": "@hourly", "after": AFTER, "count": 1}) + "\n" + line + "\n"
    result = _invoke("--batch", stdin=stdin)
    assert isinstance(result.exception, CliError)
    assert result.exception.message.startswith(message)
    assert result.stdout == '["2026-10-01T13:00:00Z"]\n'


def test_batch_refuses_a_schedule_on_the_command_line() -> None:
    assert "--batch" in _refusal("--batch", "--cron", "@daily", stdin="")


def test_exactly_one_schedule_is_required() -> None:
    assert "exactly one" in _refusal()
    assert "exactly one" in _refusal("--cron", "@daily", "--every", "1h")


def test_invalid_input_is_a_one_line_error() -> None:
    assert _refusal("--cron", "0 60 * * *") == (
        "invalid cron expression '0 60 * * *': hour value 60 is out of range 0-23"
    )
    assert "invalid interval" in _refusal("--every", "0s")
    assert "after must be an RFC 3339 instant" in _refusal("--cron", "@daily", "--after", "noon")


def test_count_is_bounded() -> None:
    assert _invoke("--cron", "@daily", "--count", "0").exit_code == 2
    assert _invoke("--cron", "@daily", "--count", "1001").exit_code == 2


def test_through_main_prints_json_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    main = pytest.importorskip("takt_cli.commands.main").main
    status = main(
        ["-o", "json", "schedule", "preview", "--cron", "@hourly", "--after", AFTER, "--count", "1"]
    )
    assert status == 0
    assert json.loads(capsys.readouterr().out) == ["2026-10-01T13:00:00Z"]


def test_through_main_a_bad_batch_line_is_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main = pytest.importorskip("takt_cli.commands.main").main
    monkeypatch.setattr("sys.stdin", io.StringIO('{"cron": "@daily", "after": "x"}\n'))
    status = main(["schedule", "preview", "--batch"])
    captured = capsys.readouterr()
    assert status != 0
    assert captured.err.startswith("takt: error: line 1: after must be")
    assert captured.err.count("\n") == 1
