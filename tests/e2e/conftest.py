"""One `takt local` process and one loopback HTTP target per e2e module.

Each module starts the real runtime as a subprocess, the way a user runs it, on a free port with
short leases; tests drive it only over HTTP. Measurements a test records with `record_property`
(schedule lag, retry gaps) are printed in the terminal summary.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import LocalTakt
from tests.e2e.receiver import Receiver


@pytest.fixture(scope="module")
def takt_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTakt]:
    log = tmp_path_factory.mktemp("takt-local") / "takt-local.log"
    runtime = LocalTakt.start(log)
    try:
        yield runtime
    finally:
        code = runtime.stop()
        # SIGTERM must stop it cleanly: the runtime turns it into its Ctrl-C path.
        assert code == 0, f"takt local exited with {code} on SIGTERM:\n{runtime.logs()}"


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    target = Receiver().start()
    try:
        yield target
    finally:
        target.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    measured = [
        (report.nodeid, name, value)
        for report in terminalreporter.stats.get("passed", [])
        for name, value in getattr(report, "user_properties", [])
        if "/e2e/" in report.nodeid
    ]
    if measured:
        terminalreporter.section("takt e2e measurements")
        for nodeid, name, value in measured:
            terminalreporter.write_line(f"{nodeid.rsplit('::', 1)[-1]}: {name} = {value}")
