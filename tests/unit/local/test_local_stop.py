"""A second Ctrl-C while `takt local` stops (about a second: it writes its data) is answered with
a line, not a traceback raised inside the stop; and the line that says it stops is the last one,
whatever the invocations it cuts short would log (issue 29: Ctrl-C and its messages)."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from takt.observability import logger
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
    """The signal handlers and the logging the stop changes, as they were."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
        logging.disable(logging.NOTSET)


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


class CutShort:
    """A runtime whose stop cuts an invocation short: the invocation logs its failed calls, as
    takt's handlers and botocore do when moto stops under them."""

    def stop(self) -> None:
        logger.error("batch processed", extra={"Failed": 1})
        logging.getLogger("botocore").error("connection refused")


@pytest.mark.usefixtures("handlers_restored")
def test_nothing_is_logged_after_the_line_that_says_it_stops(
    log_lines: Callable[[], list[dict[str, Any]]],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    logger.error("before the stop")

    stop(CutShort())
    printed = capsys.readouterr().err.splitlines()

    assert [line["message"] for line in log_lines()] == ["before the stop"], (
        "rule: a stop cut short logs nothing after its line"
    )
    assert caplog.messages == ["before the stop"]  # takt's line propagates; botocore's is gone
    assert printed[-1] == STOPPING
