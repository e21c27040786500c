"""The CLI's error contract without a server: one line on stderr, nothing on stdout, non-zero."""

from __future__ import annotations

import socket

import pytest

from takt_cli.commands.main import main
from takt_cli.local.runtime import free_port
from tests.unit.cli.conftest import FakeApi


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(out: str, err: str) -> str:
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("takt: error: ")
    return lines[0]


@pytest.fixture
def nowhere() -> str:
    """An endpoint where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


def test_unknown_flag_is_one_error_line_with_usage_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "jobs", "list", "--bogus")

    assert code == 2
    assert "--bogus" in assert_one_error_line(out, err)


def test_unknown_command_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "jobs", "explode")

    assert code == 2
    assert "explode" in assert_one_error_line(out, err)


def test_missing_argument_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "executions", "get")

    assert code == 2
    assert "EXECUTION_ID" in assert_one_error_line(out, err)


def test_unknown_output_format_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-o", "yaml", "jobs", "list")

    assert code == 2
    assert "yaml" in assert_one_error_line(out, err)


def test_unreachable_endpoint_is_one_error_line_naming_it(
    capsys: pytest.CaptureFixture[str], nowhere: str
) -> None:
    code, out, err = run(capsys, "--endpoint", nowhere, "jobs", "list")

    assert code == 1
    assert f"cannot reach {nowhere}" in assert_one_error_line(out, err)


def test_endpoint_comes_from_takt_endpoint_env(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, nowhere: str
) -> None:
    monkeypatch.setenv("TAKT_ENDPOINT", nowhere)

    code, out, err = run(capsys, "executions", "list", "job_x")

    assert code == 1
    assert nowhere in assert_one_error_line(out, err)


def test_body_that_is_not_json_is_one_error_line(
    capsys: pytest.CaptureFixture[str], nowhere: str
) -> None:
    code, out, err = run(capsys, "--endpoint", nowhere, "jobs", "create", "--body", "{oops")

    assert code == 1
    assert "--body is not valid JSON" in assert_one_error_line(out, err)


def test_body_that_is_not_an_object_is_one_error_line(
    capsys: pytest.CaptureFixture[str], nowhere: str
) -> None:
    code, out, err = run(capsys, "--endpoint", nowhere, "jobs", "update", "job_x", "--body", "[1]")

    assert code == 1
    assert "JSON object" in assert_one_error_line(out, err)


def test_payload_that_is_not_json_is_one_error_line(
    capsys: pytest.CaptureFixture[str], nowhere: str
) -> None:
    code, out, err = run(
        capsys,
        "--endpoint",
        nowhere,
        "jobs",
        "create",
        "--every",
        "1h",
        "--target",
        "https://svc/x",
        "--payload",
        "not json",
    )

    assert code == 1
    assert "--payload is not valid JSON" in assert_one_error_line(out, err)


def test_help_lists_the_command_groups(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")

    assert code == 0
    for command in ("jobs", "executions", "schedule", "local"):
        assert command in out


def test_an_unreachable_local_endpoint_says_to_start_takt_local(
    capsys: pytest.CaptureFixture[str], nowhere: str
) -> None:
    code, out, err = run(capsys, "--endpoint", nowhere, "jobs", "list")

    line = assert_one_error_line(out, err)
    assert code == 1
    assert "nothing answers there" in line
    assert "is takt local running?" in line


def _listening() -> socket.socket:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    return busy


def test_takt_local_on_a_busy_port_says_so_before_starting_anything(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def started(self: object) -> None:
        raise AssertionError("takt local started moto before refusing a busy port")

    monkeypatch.setattr("takt_cli.local.runtime.LocalRuntime.start", started)
    with _listening() as busy:
        port = busy.getsockname()[1]
        code, out, err = run(capsys, "local", "--port", str(port), "--in-memory")

    assert code == 1
    assert f"port {port} on 127.0.0.1 is in use" in assert_one_error_line(out, err)


def test_takt_receive_on_a_busy_port_says_so_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _listening() as busy:
        port = busy.getsockname()[1]
        code, out, err = run(capsys, "receive", "--port", str(port), "--secret", "whsec_MfKQ")

    assert code == 1
    assert f"port {port} on 127.0.0.1 is in use" in assert_one_error_line(out, err)


def test_takt_receive_on_a_busy_port_says_so_before_asking_the_api_for_keys(
    capsys: pytest.CaptureFixture[str], fake_api: FakeApi
) -> None:
    with _listening() as busy:
        port = busy.getsockname()[1]
        code, out, err = run(capsys, "--endpoint", fake_api.url, "receive", "--port", str(port))

    assert code == 1
    assert f"port {port} on 127.0.0.1 is in use" in assert_one_error_line(out, err)
    assert fake_api.received == [], "a busy port is refused before anything starts: no keys fetched"
