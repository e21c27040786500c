"""DynamoDB on demand or provisioned: each table's (and index's) cost per hour under a load.

On demand bills every unit used. Provisioned bills the capacity held, by the hour, whether used
or not; Application Auto Scaling's target tracking holds it at the load divided by the target
utilization (70 % as the CDK app ships it). Target tracking follows a load that changes over
minutes: it scales up after two minutes of its alarm and may scale down at most 27 times a day,
so a burst inside one minute (the seed's top of the hour) is not followed. A table that takes
such a burst needs its capacity held at the busiest minute's rate the whole hour, or it
throttles: that is what `provisioned` prices for a load with a burst. `provisioned_raised_ahead`
prices what the app does instead (`takt.dispatch.ahead.TableScaleAhead`): the watchdog raises
the minimums to the burst's rates ahead of it and lowers them and the capacity together once the
minute and its tail have passed, once an hour (DynamoDB allows one decrease an hour after the
day's first four), so the burst's capacity is held `RAISED_AHEAD_MINUTES` of the hour and the
steady load's the rest; it assumes the increase completes in time, which for a table's first
large increase (new partitions) it may not. `as_billed` prices a cost breakdown's DynamoDB lines
the way a profile bills them. Tables and indexes with no per-execution load are priced at their
minimum capacity (one unit each way), the floor a provisioned table always pays; on demand they
cost nothing idle, which is why a small deployment is cheaper on demand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from takt.dispatch.ahead import hold_after_increase
from takt_cli.capacity.prices import US_EAST_1, Prices

# Tables and indexes takt creates (takt.resources.TABLES), named as the meter names them.
TABLES = (
    "executions",
    "executions/open",
    "executions/attention",
    "jobs",
    "jobs/unindexed",
    "due",
    "idempotency",
    "tenants",
)
TARGET_UTILIZATION = 0.70
MIN_CAPACITY_UNITS = 1.0
SECONDS_PER_HOUR = 3600
# A capacity raised for the busiest minute: 5 minutes ahead (the watchdog's forecast, as for the
# Fargate workers: `fargateScaleAheadMinutes`), the minute itself and the one after it (its
# tail: `takt.dispatch.ahead.hold_after_increase`), and up to a minute more until the watchdog's
# next minute step lowers it.
RAISED_AHEAD_MINUTES = int(hold_after_increase(5).total_seconds()) // 60 + 1


@dataclass(frozen=True)
class TableLoad:
    """One table's (or index's) capacity units per execution."""

    name: str
    write_units: float = 0.0
    read_units: float = 0.0


@dataclass(frozen=True)
class HourlyLoad:
    """An hour of executions: `steady_per_sec` all hour, and `burst` more in its busiest
    minute (0 for a steady hour)."""

    steady_per_sec: float
    burst: float = 0.0

    @property
    def executions(self) -> float:
        return self.steady_per_sec * SECONDS_PER_HOUR + self.burst

    @property
    def busiest_per_sec(self) -> float:
        """The busiest minute's mean rate: what capacity held all hour must serve."""
        return self.steady_per_sec + self.burst / 60


@dataclass(frozen=True)
class TableBill:
    """One table's cost per hour each way, and the capacity provisioned holds."""

    name: str
    on_demand_usd_per_hour: float
    provisioned_usd_per_hour: float
    write_capacity: float
    read_capacity: float
    provisioned_raised_ahead_usd_per_hour: float

    @property
    def cheaper(self) -> str:
        return (
            "provisioned"
            if self.provisioned_usd_per_hour < self.on_demand_usd_per_hour
            else "on demand"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "on_demand_usd_per_hour": round(self.on_demand_usd_per_hour, 3),
            "provisioned_usd_per_hour": round(self.provisioned_usd_per_hour, 3),
            "provisioned_write_capacity_units": round(self.write_capacity),
            "provisioned_read_capacity_units": round(self.read_capacity),
            "provisioned_raised_ahead_usd_per_hour": round(
                self.provisioned_raised_ahead_usd_per_hour, 3
            ),
            "cheaper": self.cheaper,
        }


def bill_table(
    table: TableLoad,
    load: HourlyLoad,
    *,
    target_utilization: float = TARGET_UTILIZATION,
    prices: Prices = US_EAST_1,
) -> TableBill:
    """`table` under `load`, on demand and provisioned with auto scaling at
    `target_utilization` (held at the busiest minute's rate when the hour has a burst)."""

    def held(rate: float) -> tuple[float, float, float]:
        """(write, read capacity, $ an hour) held for `rate` executions a second."""
        write = max(MIN_CAPACITY_UNITS, rate * table.write_units / target_utilization)
        read = max(MIN_CAPACITY_UNITS, rate * table.read_units / target_utilization)
        usd = (
            write * prices.dynamodb_write_capacity_unit_hour
            + read * prices.dynamodb_read_capacity_unit_hour
        )
        return write, read, usd

    write_capacity, read_capacity, provisioned = held(load.busiest_per_sec)
    steady = held(load.steady_per_sec)[2]
    raised = RAISED_AHEAD_MINUTES / 60 if load.burst else 0.0
    on_demand = load.executions * (
        table.write_units * prices.dynamodb_write_unit_per_million
        + table.read_units * prices.dynamodb_read_unit_per_million
    )
    return TableBill(
        table.name,
        on_demand / 1e6,
        provisioned,
        write_capacity,
        read_capacity,
        provisioned * raised + steady * (1 - raised),
    )


def table_name(where: str) -> str:
    """`takt-executions/open` (as the meter names a table and index) as `executions/open`."""
    table, _, index = where.partition("/")
    short = next((name for name in TABLES if "/" not in name and name in table), table)
    return f"{short}/{index}" if index else short


def units_by_table(metered: Mapping[str, float]) -> dict[str, float]:
    """A `takt bench local` report's units (`"worker: takt-jobs GetItem": 1.0`) summed by
    table and index."""
    out: dict[str, float] = {}
    for key, units in metered.items():
        where = key.split(": ", 1)[1].split(" ", 1)[0]
        name = table_name(where)
        out[name] = out.get(name, 0.0) + units
    return out


def table_loads(writes: Mapping[str, float], reads: Mapping[str, float]) -> tuple[TableLoad, ...]:
    """Every table and index of `TABLES` with its units per execution (0 where none)."""
    return tuple(TableLoad(name, writes.get(name, 0.0), reads.get(name, 0.0)) for name in TABLES)


def billing_report(
    tables: tuple[TableLoad, ...],
    load: HourlyLoad,
    *,
    target_utilization: float = TARGET_UTILIZATION,
    prices: Prices = US_EAST_1,
) -> dict[str, object]:
    """Per table on demand against provisioned, the totals each way and per million
    executions, and the cheapest mix (each table billed its cheaper way)."""
    bills = [
        bill_table(t, load, target_utilization=target_utilization, prices=prices) for t in tables
    ]
    on_demand = sum(b.on_demand_usd_per_hour for b in bills)
    provisioned = sum(b.provisioned_usd_per_hour for b in bills)
    mixed = sum(min(b.on_demand_usd_per_hour, b.provisioned_usd_per_hour) for b in bills)
    ahead = sum(b.provisioned_raised_ahead_usd_per_hour for b in bills)
    per_million = 1e6 / load.executions
    return {
        "load": {
            "executions_per_hour": round(load.executions),
            "busiest_minute_per_sec": round(load.busiest_per_sec),
            "target_utilization": target_utilization,
        },
        "tables": {b.name: b.to_dict() for b in bills},
        "on_demand": {
            "usd_per_hour": round(on_demand, 2),
            "usd_per_million_executions": round(on_demand * per_million, 3),
        },
        "provisioned": {
            "usd_per_hour": round(provisioned, 2),
            "usd_per_million_executions": round(provisioned * per_million, 3),
        },
        "provisioned_raised_ahead_of_the_burst": {
            "usd_per_hour": round(ahead, 2),
            "usd_per_million_executions": round(ahead * per_million, 3),
        },
        "each_table_its_cheaper_way": {
            "usd_per_hour": round(mixed, 2),
            "usd_per_million_executions": round(mixed * per_million, 3),
        },
        # Provisioned as the app holds it: raised ahead of a burst and lowered after it.
        "cheaper": "provisioned" if ahead < on_demand else "on demand",
    }


DYNAMODB_THROUGHPUT_LINES = ("DynamoDB writes", "DynamoDB reads")
"""The cost breakdown's lines that price DynamoDB's throughput (on demand): storage is apart."""


def as_billed(
    lines: Mapping[str, float],
    billing: str,
    tables: tuple[TableLoad, ...],
    load: HourlyLoad,
    *,
    target_utilization: float = TARGET_UTILIZATION,
    prices: Prices = US_EAST_1,
) -> dict[str, float]:
    """`lines` (a cost breakdown per million executions, DynamoDB on demand) as a profile whose
    `tableBilling` is `billing` pays them: unchanged on demand; provisioned, its throughput lines
    replaced by the capacity held (`provisioned_raised_ahead`: the steady load's all hour, the
    burst's for `RAISED_AHEAD_MINUTES` of it, as the watchdog raises it)."""
    if billing != "provisioned":
        return dict(lines)
    bills = [
        bill_table(t, load, target_utilization=target_utilization, prices=prices) for t in tables
    ]
    held = sum(b.provisioned_raised_ahead_usd_per_hour for b in bills)
    out = {k: v for k, v in lines.items() if not k.startswith(DYNAMODB_THROUGHPUT_LINES)}
    minutes = RAISED_AHEAD_MINUTES if load.burst else 0
    # Named as a throughput line, so a breakdown billed twice, or summed apart from its
    # throughput (`scenarios.dynamodb_billing`), counts it once.
    label = (
        f"DynamoDB writes and reads, provisioned at {target_utilization:.0%} (the steady load's "
        f"capacity all hour, the busiest minute's for {minutes} minutes of it)"
    )
    out[label] = held * 1e6 / load.executions
    return out
