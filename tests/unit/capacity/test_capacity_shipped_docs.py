"""docs/CAPACITY.md, "Profiles as shipped": the seed's rows are what `takt bench simulate` gives
for the profile as it ships, run as a user runs it (the CLI, its report file)."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from takt_cli.commands.main import main

CAPACITY = Path(__file__).resolve().parents[3] / "docs" / "CAPACITY.md"


@functools.cache
def _shipped(scenario: str, *context: str) -> dict[str, Any]:
    """`takt bench simulate --scenario SCENARIO --job-seconds 10 [-c CONTEXT ...]` run as a user
    runs it (the CLI, its report file): the scenario's `as_shipped` figures. Each run once per
    module: the tests below read the same runs."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sim.json"
        args = ["bench", "simulate", "--scenario", scenario, "--job-seconds", "10"]
        for value in context:
            args += ["-c", value]
        assert main([*args, "--out", str(out)]) == 0
        shipped: dict[str, Any] = json.loads(out.read_text())["scenarios"][0]["as_shipped"]
        return shipped


@pytest.mark.parametrize(
    ("scenario", "row"),
    [
        ("steady", "| `seed`, steady 1,400/s |"),
        ("top-of-hour", "| `seed`, top of the hour (1,000,000 in the first minute) |"),
    ],
)
def test_the_seeds_rows_are_the_simulators_as_shipped(scenario: str, row: str) -> None:
    shipped = _shipped(scenario)
    lines = CAPACITY.read_text().splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith(row)]
    cells = [cell.strip().strip("*") for cell in lines[at + 1].split("|")[1:-1]]

    within = shipped.get("burst_dispatched_within_sec")
    assert cells[1] == "after"
    assert cells[2] == (f"{within:g} s" if within is not None else "-")
    assert cells[3] == f"{shipped['start_lag_sec']['p99']:g} s"
    assert cells[5] == str(shipped["not_started"])
    assert cells[6] == f"{shipped['usd_per_million_executions']:.2f}", (
        "the seed's $/M as shipped, as the simulator prices the profile's billing"
    )


def test_the_deploy_doc_prices_the_on_demand_choice_from_the_simulator() -> None:
    """docs/DEPLOY.md, "Table billing": what `-c tableBilling=onDemand` costs the seed's steady
    hour beside the provisioned tables it ships."""
    priced = {  # The seed profile ships provisioned tables.
        "provisioned": _shipped("steady")["usd_per_million_executions"],
        "onDemand": _shipped("steady", "tableBilling=onDemand")["usd_per_million_executions"],
    }

    deploy = " ".join((CAPACITY.parent / "DEPLOY.md").read_text().split())
    assert (
        f"at the steady hour's ${priced['onDemand']:.2f}/M instead of "
        f"${priced['provisioned']:.2f}/M"
    ) in deploy


def test_the_record_at_lease_figures_are_the_simulators_each_way() -> None:
    """docs/CAPACITY.md, "The record written at the lease": the seed's steady hour and its top
    of the hour priced with the claim writing the execution (`-c recordAtLease=false`) and as
    shipped (the lease writing it), each run as a user runs it."""
    priced: dict[tuple[str, str], float] = {}
    for scenario in ("steady", "top-of-hour"):
        for record_at_lease in ("false", "true"):
            # Both ways before the claim cursor, as the section priced them (the seed profile
            # ships the record written at the lease).
            lease = () if record_at_lease == "true" else ("recordAtLease=false",)
            shipped = _shipped(scenario, *lease, "dueCursor=false")
            priced[(scenario, record_at_lease)] = shipped["usd_per_million_executions"]

    doc = " ".join(CAPACITY.read_text().split())
    steady = (priced[("steady", "false")], priced[("steady", "true")])
    top = (priced[("top-of-hour", "false")], priced[("top-of-hour", "true")])
    assert f"the seed's steady hour **${steady[0]:.2f} -> ${steady[1]:.2f}/M**" in doc
    assert f"its top of the hour ${top[0]:.2f} -> ${top[1]:.2f}/M" in doc
    assert steady[1] < steady[0] and top[1] < top[0]


def test_the_claim_cursor_figures_are_the_simulators_each_way() -> None:
    """docs/CAPACITY.md, "The claim cursor": the seed's steady hour and its top of the hour
    priced with each fired due item deleted (`-c dueCursor=false`) and as shipped (the cursor),
    each run as a user runs it."""
    # The seed profile ships the cursor.
    shipped = {
        (scenario, cursor): _shipped(scenario, *(() if cursor == "true" else ("dueCursor=false",)))
        for scenario in ("steady", "top-of-hour")
        for cursor in ("false", "true")
    }

    def usd(scenario: str, cursor: str) -> str:
        return f"${shipped[(scenario, cursor)]['usd_per_million_executions']:.2f}"

    def p99(scenario: str, cursor: str) -> str:
        return f"{shipped[(scenario, cursor)]['start_lag_sec']['p99']:g}"

    doc = " ".join(CAPACITY.read_text().split())
    assert (
        f"the seed's steady hour **{usd('steady', 'false')} -> {usd('steady', 'true')}/M** "
        f"(p99 start lag {p99('steady', 'false')} -> {p99('steady', 'true')} s"
    ) in doc
    assert (
        f"top of the hour {usd('top-of-hour', 'false')} -> {usd('top-of-hour', 'true')}/M "
        f"(59.6 s, p99 {p99('top-of-hour', 'false')} -> {p99('top-of-hour', 'true')} s, "
        "0 unstarted)"
    ) in doc
    top = shipped[("top-of-hour", "true")]
    assert (top["burst_dispatched_within_sec"], top["not_started"]) == (59.6, 0)
    assert shipped[("steady", "true")]["usd_per_million_executions"] <= 2.0


def test_the_shipped_breakdown_is_the_simulators() -> None:
    """docs/CAPACITY.md, "Cost per million, component by component": each component of the
    seed's steady hour as shipped, and the total, as `takt bench simulate` prices them."""
    shipped = _shipped("steady")
    lines = CAPACITY.read_text().splitlines()
    start = lines.index("| component, as shipped | $/M |")
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        name, usd = (cell.strip().strip("*") for cell in line.split("|")[1:-1])
        rows[name] = usd
    priced = shipped["usd_per_million_breakdown"]
    assert len(rows) == len(priced) + 1
    for component, usd in priced.items():
        head = component.split(" (")[0].replace("70%", "70 %")
        (row,) = [name for name in rows if name.startswith(head)]
        assert rows[row] == f"{usd:.3f}", component
    assert rows["total"] == f"{shipped['usd_per_million_executions']:.2f}"
