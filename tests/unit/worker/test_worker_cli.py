"""`takt worker`'s refusals: each is one line on stderr and a non-zero exit, before any work."""

from __future__ import annotations

import pytest

from takt.config import MAX_WORKER_SLOTS, Settings
from takt_cli.commands.main import main


@pytest.fixture(autouse=True)
def one_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(lane_urls={"default": "http://127.0.0.1:9/queue/default"})
    monkeypatch.setattr("takt_cli.commands.worker.get_settings", lambda: settings)


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["worker", *args])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    [line] = err.splitlines()
    return line


def test_a_handler_module_that_cannot_be_imported_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = _error(capsys, "--module", "no_such_handlers_module")

    assert line == (
        "takt: error: cannot import a handler module: No module named 'no_such_handlers_module'"
    )


def test_a_lane_the_deployment_does_not_have_is_refused_with_the_lanes_it_has(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = _error(capsys, "--lanes", "default,urgent")

    assert line == "takt: error: unknown lanes ['urgent']; configured lanes: default"


def test_the_help_names_the_options_a_fargate_task_sets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["worker", "--help"]) == 0

    help_text = capsys.readouterr().out
    for option in ("--module", "--lanes", "--concurrency", "--grace-sec"):
        assert option in help_text


def test_the_worker_takes_as_many_slots_as_a_profile_may_ship_and_refuses_one_more(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Rule: `takt worker --concurrency` and the profiles' `fargateSlots` share one bound,
    MAX_WORKER_SLOTS, the most slots bench/worker_slots.py measured holding (docs/WORKERS.md)."""
    at_bound = _error(capsys, "--concurrency", str(MAX_WORKER_SLOTS), "--lanes", "urgent")
    code = main(["worker", "--concurrency", str(MAX_WORKER_SLOTS + 1)])
    [beyond] = capsys.readouterr().err.splitlines()

    assert at_bound.startswith("takt: error: unknown lanes"), (
        f"{MAX_WORKER_SLOTS} slots, what a profile may ship, must pass the worker's own check"
    )
    assert code != 0 and f"{MAX_WORKER_SLOTS + 1} is not in the range" in beyond, (
        "one slot beyond MAX_WORKER_SLOTS is refused in one line"
    )
