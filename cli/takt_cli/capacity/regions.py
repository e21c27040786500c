"""What the second and third region of a deployment across regions cost, idle and at the seed's
load (docs/DEPLOY.md, "Regions"), from the templates `cdk synth -c regions=...` writes.

AWS bills a write to a global table's replica once in every replica's region (a replicated
write unit each, priced as a write unit), and the writes of its indexes in every region too,
so each write unit of one region costs as many as there are regions; replication also moves
the item between regions, billed as data transfer (DynamoDB developer guide, "Understanding
Amazon DynamoDB billing for global tables"). The region lease adds its renewals, written to
the MRSC table's replicas, and the standby regions' strongly consistent reads of it.

Each region runs the stateless stack, so each pays what one region pays idle
(`takt_cli.capacity.idle`); for a standby region that is an upper bound, as its fenced drivers
skip the due index's probes. Prices come from the tooling's one table
(`takt_cli.capacity.prices`).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.driver import HANDOVER_SEC
from takt.config import Settings
from takt.dispatch.driver import STOP_BEFORE_END_SEC
from takt_cli.capacity.idle import (
    MINUTES_PER_MONTH,
    CostLine,
    Template,
    base_lines,
    idle_units,
    price_table,
    render,
)
from takt_cli.capacity.idle import (
    PRICES as ONE_REGION_PRICES,
)
from takt_cli.capacity.idle import report as one_region_report
from takt_cli.capacity.model import CallProfile
from takt_cli.capacity.prices import LIST_PRICES, amount_text

# The seed's steady load (DESIGN.md): executions a second, each writing what the capacity
# model's measured write path writes (`CallProfile.write_units_by_table`).
SEED_EXECUTIONS_PER_SEC = 1400
SECONDS_PER_MONTH = MINUTES_PER_MONTH * 60
# A write unit is at most 1 KB of item; replication moves at most that much per unit.
BYTES_PER_WRITE_UNIT = 1024
# The region lease's timing as every function reads it (the app sets none of its own).
RENEW_SEC = float(Settings.model_fields["region_renew_sec"].default)
PRICES = {
    name: LIST_PRICES[name]
    for name in (
        "dynamodb_write_unit_per_million",
        "dynamodb_read_unit_per_million",
        "data_transfer_inter_region_per_gb",
    )
}
_REGIONAL = re.compile(r"^TaktStateless-(?P<region>[a-z]{2}(?:-[a-z]+)+-[0-9])\.template\.json$")


@dataclass(frozen=True)
class RegionStacks:
    region: str
    stateful: Template
    stateless: Template


def regional_stacks(out: Path) -> list[RegionStacks]:
    """Each region's templates in `out`, in the order the functions' `TAKT_REGIONS` lists them
    (the first holds the lease first); empty for a deployment in one region."""
    found = sorted(p.name for p in out.glob("*.template.json") if _REGIONAL.match(p.name))
    if not found:
        return []
    any_stateless = _read(out / found[0])
    variables = _function(any_stateless, "scheduler")["Environment"]["Variables"]
    return [
        RegionStacks(
            region,
            _read(out / f"TaktStateful-{region}.template.json"),
            _read(out / f"TaktStateless-{region}.template.json"),
        )
        for region in json.loads(variables["TAKT_REGIONS"])
    ]


def _read(path: Path) -> Template:
    try:
        template: Template = json.loads(path.read_text())
    except OSError:
        raise ValueError(f"no {path.name} in {path.parent}: run `make synth` first") from None
    return template


def _function(stateless: Template, name: str) -> dict[str, Any]:
    pattern = re.compile(f"^Functions{name.capitalize()}[0-9A-F]{{8}}$")
    (properties,) = [
        resource["Properties"]
        for logical_id, resource in stateless["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function" and pattern.match(logical_id)
    ]
    return dict(properties)


def lease_processes(stateless: Template) -> int:
    """The processes of a region that keep the lease while idle: its live drivers (as many as
    a driver's life holds minutes, infra/driver.py) and its watchdog."""
    scheduler = _function(stateless, "scheduler")
    driver_life = int(scheduler["Timeout"]) - STOP_BEFORE_END_SEC
    return (driver_life - HANDOVER_SEC) // 60 + 1


def _usd_line(item: str, arithmetic: str, units: float, price_key: str) -> CostLine:
    price = PRICES[price_key]
    return CostLine(item, f"{arithmetic} x {price}", units * price.usd)


def idle_region_lines(stacks: list[RegionStacks]) -> list[CostLine]:
    """What the regions after the first add to the first region's idle cost: their own stacks
    idle, and what the lease and replication add (`lease_lines`)."""
    return [
        CostLine(
            f"{stack.region}'s stacks idle, as one region's (an upper bound: fenced, its "
            "drivers skip the due index's probes)",
            "takt cost idle of its templates",
            sum(line.usd for line in base_lines(stack.stateful, stack.stateless)),
        )
        for stack in stacks[1:]
    ] + lease_lines(stacks)


def lease_lines(stacks: list[RegionStacks]) -> list[CostLine]:
    """The idle cost of being in more than one region: the first region's idle writes
    replicated, the lease's renewals in every replica, the standby regions' reads of it."""
    regions = len(stacks)
    first = stacks[0].stateless
    variables = _function(first, "scheduler")["Environment"]["Variables"]
    units = idle_units(int(variables["TAKT_DUE_SHARDS"]), 1)
    processes = lease_processes(first)
    per_minute = processes * 60 / RENEW_SEC
    return [
        _usd_line(
            f"the idle drivers' writes, replicated to {regions - 1} more region(s)",
            f"{units.scheduler_writes:g} WRU/min x {regions - 1} x {MINUTES_PER_MONTH:,} min",
            units.scheduler_writes * (regions - 1) * MINUTES_PER_MONTH,
            "dynamodb_write_unit_per_million",
        ),
        _usd_line(
            f"region lease renewals: {processes} processes every {RENEW_SEC:g} s, a replicated "
            f"write in each of {regions} regions",
            f"{per_minute:g}/min x {regions} x {MINUTES_PER_MONTH:,} min",
            per_minute * regions * MINUTES_PER_MONTH,
            "dynamodb_write_unit_per_million",
        ),
        _usd_line(
            f"the standby regions' strongly consistent reads of the lease ({processes} "
            f"processes each, every {RENEW_SEC:g} s)",
            f"{per_minute:g}/min x {regions - 1} x {MINUTES_PER_MONTH:,} min",
            per_minute * (regions - 1) * MINUTES_PER_MONTH,
            "dynamodb_read_unit_per_million",
        ),
    ]


def busy_processes(stateless: Template) -> int:
    """The most processes of a region that renew the lease at once under load: every claimer
    and scheduler instance its reservations allow, every worker its lanes' event sources may
    run (`MaximumConcurrency`), and the watchdog. Each renews at most every `RENEW_SEC`
    (`takt.regions.fence`), so this bounds the renewals from above."""
    reserved = sum(
        int(resource["Properties"].get("ReservedConcurrentExecutions", 0))
        for name, resource in stateless["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
        and re.match(r"^Functions(Scheduler|Claimer)[0-9A-F]{8}$", name)
    )
    workers = sum(
        int(resource["Properties"].get("ScalingConfig", {}).get("MaximumConcurrency", 0))
        for resource in stateless["Resources"].values()
        if resource["Type"] == "AWS::Lambda::EventSourceMapping"
    )
    return reserved + workers + 1


def seed_load_lines(
    regions: int, processes: int, calls: CallProfile | None = None
) -> list[CostLine]:
    """What the regions after the first add at the seed's steady load: every write unit of an
    execution once more in each of them, the bytes it replicates, and the lease's renewals by
    up to `processes` busy processes (`busy_processes`), each a write in every replica."""
    write_units = sum((calls or CallProfile()).write_units_by_table.values())
    renewals = processes * 60 / RENEW_SEC
    replicated = SEED_EXECUTIONS_PER_SEC * SECONDS_PER_MONTH * write_units * (regions - 1)
    gigabytes = replicated * BYTES_PER_WRITE_UNIT / 1e9
    return [
        _usd_line(
            f"replicated writes: {write_units:g} write units per execution in {regions - 1} "
            "more region(s)",
            f"{SEED_EXECUTIONS_PER_SEC:,}/s x {SECONDS_PER_MONTH:,} s x {write_units:g} x "
            f"{regions - 1} = {replicated / 1e6:,.0f} M",
            replicated,
            "dynamodb_write_unit_per_million",
        ),
        _usd_line(
            f"their transfer between regions (at most {BYTES_PER_WRITE_UNIT:,} B a unit)",
            f"{gigabytes:,.0f} GB",
            gigabytes,
            "data_transfer_inter_region_per_gb",
        ),
        _usd_line(
            f"region lease renewals at load: up to {processes} busy processes every "
            f"{RENEW_SEC:g} s, a replicated write in each of {regions} regions",
            f"{renewals:,g}/min x {regions} x {MINUTES_PER_MONTH:,} min",
            renewals * regions * MINUTES_PER_MONTH,
            "dynamodb_write_unit_per_million",
        ),
    ]


def regions_price_table() -> str:
    """The prices the regions' lines use that one region's table does not list."""
    rows = ["| price (us-east-1) | USD |", "|---|---:|"]
    rows += [
        f"| {price.unit} | {amount_text(price.listed)} |"
        for name, price in PRICES.items()
        if name not in ONE_REGION_PRICES
    ]
    return "\n".join(rows)


def report(out: Path) -> str:
    """`takt cost idle`'s tables: one region's, or with regions the first region's, what the
    others add idle, and what they add at the seed's load."""
    stacks = regional_stacks(out)
    if not stacks:
        return one_region_report(out)
    first = stacks[0]
    return "\n\n".join(
        [
            f"{first.region} (the first region, holding the lease):",
            render(base_lines(first.stateful, first.stateless)),
            f"The other {len(stacks) - 1} region(s) add, idle:",
            render(idle_region_lines(stacks)),
            f"At the seed's load ({SEED_EXECUTIONS_PER_SEC:,} executions/s) they add:",
            render(seed_load_lines(len(stacks), busy_processes(first.stateless))),
            "List prices:",
            price_table(),
            regions_price_table(),
        ]
    )


def main(argv: list[str]) -> None:
    """`python -m infra.cost [cdk.out]`: print the report, or one line and exit status 1."""
    try:
        print(report(Path(argv[1] if len(argv) > 1 else "cdk.out")))
    except ValueError as exc:
        sys.exit(f"infra.cost: {exc}")
