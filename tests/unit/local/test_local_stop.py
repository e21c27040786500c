"""A second Ctrl-C while `takt local` stops (about a second: it writes its data) is answered with
a line, not a traceback raised inside the stop (issue 29: Ctrl-C and its messages)."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from takt_cli.commands.local import STILL_STOPPING, STOPPING, stop


class SecondCtrlC:
    """A runtime whose stop is interrupted by another Ctrl-C, and which records that it ran on."""

    def __init__(self) -> None:
        self.finished = False

    def stop(self) -> None:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)
        self.finished = True


@pytest.fixture
def handlers_restored() -> Iterator[None]:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])


@pytest.mark.usefixtures("handlers_restored")
def test_a_second_ctrl_c_during_the_stop_is_a_line_and_the_stop_runs_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runtime = SecondCtrlC()

    stop(runtime)
    printed = capsys.readouterr().err.splitlines()

    assert runtime.finished, "a second Ctrl-C does not cut the stop (and the data's write) short"
    assert printed == [STOPPING, STILL_STOPPING, STILL_STOPPING], (
        "Ctrl-C during the stop is answered with a line, not a traceback"
    )
