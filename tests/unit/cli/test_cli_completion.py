"""Shell completion through click's `_TAKT_COMPLETE`: the bash script, commands, and job ids
fetched from the API."""

from __future__ import annotations

import pytest

from takt_cli.commands.main import main
from takt_cli.local.runtime import free_port
from tests.unit.cli.conftest import FakeApi


def complete(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], words: str, **env: str
) -> list[str]:
    """The completions bash would show for `words` (the last one being completed)."""
    monkeypatch.setenv("_TAKT_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split(" ")) - 1))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 0
    return [line.split(",", 1)[1] for line in capsys.readouterr().out.splitlines() if line]


def test_bash_source_prints_the_completion_function(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("_TAKT_COMPLETE", "bash_source")

    with pytest.raises(SystemExit):
        main([])

    script = capsys.readouterr().out
    assert "_takt_completion()" in script
    assert "complete -o nosort -F _takt_completion takt" in script


def test_commands_complete(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert complete(monkeypatch, capsys, "takt jo") == ["jobs"]
    assert complete(monkeypatch, capsys, "takt jobs pa") == ["pause"]


def test_job_ids_complete_from_the_api(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fake_api: FakeApi
) -> None:
    fake_api.answers["/v1/jobs"] = {
        "items": [{"id": "job_01a", "name": "a"}, {"id": "job_02b", "name": "b"}],
        "next_cursor": None,
    }

    found = complete(monkeypatch, capsys, "takt jobs get job_0", TAKT_ENDPOINT=fake_api.url)
    narrowed = complete(monkeypatch, capsys, "takt jobs get job_02", TAKT_ENDPOINT=fake_api.url)

    assert found == ["job_01a", "job_02b"]
    assert narrowed == ["job_02b"]


def test_an_unreachable_api_completes_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"

    assert complete(monkeypatch, capsys, "takt jobs get job_", TAKT_ENDPOINT=nowhere) == []
