"""Every fault scenario judges from what it observed itself (issue 28): the loopback receivers
and the handlers' side-effect log, the recording proxy (`tests.chaos.oracle.WireTap`), and the
raw tables read with the boto3 client. Never from takt's stores, which share the bugs they would
judge, nor from takt's counters: "fenced == 0" would pass if takt stopped counting.

A grep over the verdict's code: the checker and the oracle import no takt store and call none;
the scenarios read no execution or job through a store, no `fenced_reports` counter, and take
their `fenced` figure from the wire. takt's own count (`takt_fenced`) may be checked besides,
as takt's account of itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERDICT_MODULES = [
    ROOT / "tests" / "support" / "history.py",
    ROOT / "tests" / "chaos" / "oracle.py",
]
SCENARIOS = sorted((ROOT / "tests" / "chaos").glob("test_chaos_*.py"))
RULE = "a fault scenario's verdict comes from what it observed, never takt's stores or counters"

# What reading through takt, or its counters, looks like in test code. A scenario may import a
# store to set a fault up (an indexer under test, a record planted); the verdict's modules not.
STORE_READS = re.compile(
    r"list_for_job\(|\.fenced_reports\b|record_fenced\(|\bjobs\.get\(|\bexecutions\.get\("
)
STORE_IMPORTS = re.compile(r"\bfrom takt\.store\b|\bimport takt\.store\b")
# A scenario that drives a fault through a store (an actor's write, at a chosen instant) is not
# judging with it; each such line is named here with why.
FAULT_DRIVERS = {
    ("test_chaos_leases.py", "executions.get("): "worker A's heartbeat, read as its runner reads",
}


def _offending(path: Path, pattern: re.Pattern[str]) -> list[str]:
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = pattern.search(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        if (path.name, match.group(0)) in FAULT_DRIVERS:
            continue
        found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


@pytest.mark.parametrize("module", VERDICT_MODULES, ids=lambda p: p.name)
def test_the_checker_and_the_oracle_read_no_takt_store(module: Path) -> None:
    assert _offending(module, STORE_IMPORTS) == [], RULE
    assert _offending(module, STORE_READS) == [], RULE


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_no_scenario_reads_an_execution_a_job_or_a_counter_through_takt(scenario: Path) -> None:
    assert _offending(scenario, STORE_READS) == [], RULE


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_a_scenarios_fenced_figure_comes_from_the_wire(scenario: Path) -> None:
    taken = [
        line.strip()
        for line in scenario.read_text().splitlines()
        if re.search(r"\breport\.fenced\s*=[^=]", line)
    ]

    assert all("stale_reports_refused(" in line for line in taken), RULE


def test_the_grep_finds_a_verdict_read_through_a_store(tmp_path: Path) -> None:
    """The check itself: a scenario that judges through a store or a counter is found."""
    planted = tmp_path / "test_chaos_planted.py"
    planted.write_text(
        "record = svc.executions.get(TENANT, execution_id)\n"
        "assert record.fenced_reports == 0\n"
        "page, _ = svc.executions.list_for_job(TENANT, job_id, limit=10, cursor=None)\n"
    )
    found = [line for line in planted.read_text().splitlines() if STORE_READS.search(line)]

    assert len(found) == 3, "each way of reading through takt is recognised"
