"""The idle cost in docs/DEPLOY.md is what `takt_cli/capacity/idle.py` computes from the synthesized
templates, and the read units it counts are the library's own calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
from aws_cdk.assertions import Template

from infra.context import PROFILES
from takt_cli.capacity.idle import (
    PRICES,
    SHARD_COUNTS,
    base_lines,
    fargate_lines,
    idle_units,
    price_table,
    render,
    shard_count_table,
)
from takt_cli.capacity.model import WATCHDOG_SWEEPS
from takt_cli.capacity.prices import LIST_PRICES
from takt_cli.commands.main import main

DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md"
REGENERATE = "regenerate with `make synth && takt cost idle cdk.out`"
# Consistent reads of the minutes' counts an idle minute makes (the first test's docstring).
SPLIT_READS = 38


@pytest.mark.parametrize(("due_shards", "open_shards"), [(1, 1), (64, 16)])
def test_an_idle_minute_costs_68_read_units_per_due_shard_and_a_claim_per_second(
    due_shards: int, open_shards: int
) -> None:
    """DEPLOY.md explains the 68: 128 eventually consistent probes and one consistent check, and
    six probes of the next minute in the last 30 s of each (the burst claimed ahead).
    The leading driver claims each second with a write (which returns the watermark), the other
    looks with an eventually consistent read; one start claim and one watermark move a minute.
    Since the hot minute split (takt.store.due), every fifth tick reads the counts of the minutes
    it sweeps, two to four of them, strongly consistent, and the watermark's move reads its
    minute's count: 38 keys a minute, whatever N (SPLIT_READS)."""
    units = idle_units(due_shards, open_shards)

    assert units.scheduler_reads == 68 * due_shards + 60 * 0.5 + SPLIT_READS
    assert units.scheduler_writes == 60 + 1 + 1
    # Each sweep queries every shard of the open index and every watch list partition.
    assert units.watchdog_reads == WATCHDOG_SWEEPS * (open_shards + -(-due_shards // 8)) * 0.5


@pytest.mark.parametrize("due_shards", [1, 4])
def test_a_resting_driver_costs_one_tick_and_two_looks_at_four_minutes_a_minute(
    due_shards: int,
) -> None:
    """With `driverRest` the minute's driver ticks once and rests (takt.dispatch.rest): its tick
    probes the previous and current minutes and, at second 0, the two before (half a unit each)
    and checks the oldest empty before moving the watermark (one); its rest looks at the four
    minutes from the watermark through the next, strongly consistent, before and after recording
    it. Writes: the start, the second, the watermark and the rest. Reads of the minutes' counts
    (the hot minute split): the tick's four minutes, each of the rest's two looks at four, and
    the watermark's minute, 13 keys."""
    units = idle_units(due_shards, 1, drivers=1, sweeps=1, rest=True)

    assert (units.scheduler_reads, units.scheduler_writes) == (11 * due_shards + 13, 4), (
        "idle cost: a resting driver's minute is one tick and its rest, not sixty ticks"
    )


def test_deploy_doc_shows_the_idle_cost_of_the_shipped_templates(
    stateful_template: Template, stateless_template: Template
) -> None:
    table = render(base_lines(stateful_template.to_json(), stateless_template.to_json()))

    assert table in DEPLOY_DOC.read_text(), REGENERATE


def test_deploy_doc_shows_what_the_fargate_worker_adds(fargate_template: Template) -> None:
    table = render(fargate_lines(fargate_template.to_json()))

    assert table in DEPLOY_DOC.read_text(), REGENERATE


def test_deploy_doc_shows_the_scheduler_at_other_shard_counts() -> None:
    assert shard_count_table(SHARD_COUNTS) in DEPLOY_DOC.read_text(), REGENERATE


def test_deploy_doc_lists_the_prices_the_estimate_uses() -> None:
    assert price_table() in DEPLOY_DOC.read_text(), REGENERATE


def test_one_price_table_the_idle_cost_reads_the_tooling_s_prices() -> None:
    assert all(price is LIST_PRICES[name] for name, price in PRICES.items()), (
        "one-price-table: each price of the idle cost is the table's (takt_cli.capacity.prices)"
    )


def test_with_public_ips_the_fargate_worker_pays_an_address_a_task_and_no_nat_gateway(
    fargate_template: Template,
) -> None:
    """Rule: the idle cost prices what the template deploys. `fargateEgress` publicIp: one
    public IPv4 address for each task at the minimum, all month, and no NAT gateway's hours or
    bytes."""
    lines = {line.item: line.usd for line in fargate_lines(fargate_template.to_json())}

    assert lines["the tasks' public IPv4 addresses (one a task, 1 at minimum)"] == (
        pytest.approx(1 * 730 * 0.005)
    ), "idle cost: a public IPv4 address a task at $0.005 an hour"
    assert not [item for item in lines if "NAT" in item], "idle cost: no NAT gateway deployed"


def test_with_a_nat_gateway_the_fargate_worker_pays_its_hours_address_and_bytes(
    cli_assemblies: Callable[[str], Path],
) -> None:
    """Rule: the idle cost prices what the template deploys. `fargateEgress` natGateway (the
    `fargate` variant): the gateway's hours, its Elastic IP and the receives it carries; no
    address on the tasks."""
    (path,) = cli_assemblies("fargate").glob("TaktStateless*.template.json")
    lines = {line.item: line.usd for line in fargate_lines(json.loads(path.read_text()))}

    assert [lines["NAT gateway"], lines["its public IPv4 address"]] == pytest.approx(
        [730 * 0.045, 730 * 0.005]
    ), "idle cost: the NAT gateway's hours and its Elastic IP"
    assert lines["those receives through the NAT gateway"] > 0
    assert not [item for item in lines if "tasks' public IPv4" in item], (
        "idle cost: no public IP on the tasks behind a NAT gateway"
    )


def test_without_the_fargate_worker_it_adds_nothing(stateless_template: Template) -> None:
    assert fargate_lines(stateless_template.to_json()) == []


def test_takt_cost_idle_prints_the_tables_of_a_cdk_out_directory(
    tmp_path: Path,
    stateful_template: Template,
    stateless_template: Template,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, template in (
        ("TaktStateful", stateful_template),
        ("TaktStateless", stateless_template),
    ):
        (tmp_path / f"{name}.template.json").write_text(json.dumps(template.to_json()))

    code = main(["cost", "idle", str(tmp_path)])

    out = capsys.readouterr().out
    assert code == 0
    table = render(base_lines(stateful_template.to_json(), stateless_template.to_json()))
    assert out.startswith(table), "takt cost idle prints the idle cost table first"
    assert price_table() in out, "takt cost idle lists the prices it uses"


def test_takt_cost_idle_without_templates_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["cost", "idle", str(tmp_path)])

    out, err = capsys.readouterr()
    assert (code, out) == (1, ""), "bad input: a non-zero exit and nothing on stdout"
    assert err.splitlines() == [
        f"takt: error: no TaktStateful.template.json in {tmp_path}: run `make synth` first"
    ], "bad input gets one line naming what is missing"


def test_the_seeds_provisioned_minimums_carry_its_idle_loops_at_the_target_utilization() -> None:
    """Rule: the seed's provisioned tables serve the scheduler's probes and the watchdog's sweeps
    out of their minimum capacity (so `takt cost idle` prices those requests in it, and the
    watchdog's lowering after a burst never leaves the probes throttled): the due table's read
    and write minimums and the `open` index's read minimum hold an idle minute's units (every
    sweep's read counted on both) at the profile's target utilization."""
    context = PROFILES["seed"]
    units = idle_units(
        cast(int, context["dueShards"]),
        cast(int, context["openShards"]),
        due_cursor=cast(bool, context["dueCursor"]),
    )
    utilization = cast(int, context.get("tableTargetUtilization", 70)) / 100
    capacity = cast(dict[str, dict[str, list[int]]], context["tableCapacity"])

    def floor(name: str, way: str) -> int:
        return capacity.get(name, {}).get(way, [5])[0]

    reads = (units.scheduler_reads + units.watchdog_reads) / 60 / utilization
    assert floor("due", "read") >= reads, f"the due table's reads: {reads:.1f} units"
    assert floor("due", "write") >= units.scheduler_writes / 60 / utilization
    assert floor("executions/open", "read") >= units.watchdog_reads / 60 / utilization
