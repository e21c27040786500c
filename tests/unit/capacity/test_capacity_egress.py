"""The Fargate worker's egress is priced as the profile deploys it (`fargateEgress`): a public
IPv4 address a task-hour by default, a NAT gateway's hour and bytes when a policy asks for one.
Each figure is recomputed here from the list prices and the seed's steady hour (1,400 executions
a second of 10 s calls, 88 tasks)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from takt_cli.capacity.model import CallProfile
from takt_cli.capacity.profiles import ProfileError, load_profile
from takt_cli.capacity.scenarios import (
    NAT_BYTES_PER_EXECUTION,
    SEED,
    all_in_cost,
    profile_components,
    scaled_ahead,
)

PUBLIC_IPV4_HOUR = 0.005
NAT_HOUR, NAT_PER_GB = 0.045, 0.045
IPV4_LINE = "public IPv4 addresses (one a task-hour)"
NAT_LINE = "NAT gateway (its hours and 4 KB an execution)"


def _steady_lines(*overrides: str) -> tuple[dict[str, float], int, float]:
    """The steady hour's breakdown on the seed profile with `-c` overrides, its fleet's tasks
    and the hour's executions."""
    scenario = SEED[0]
    calls = replace(CallProfile(), target_latency_ms=10_000)
    fleet = scaled_ahead(scenario, load_profile("seed", overrides).design(), calls)
    cost = all_in_cost(scenario, fleet, calls, profile_components(calls))
    return cost["usd_per_million_breakdown"], fleet.fargate_tasks, scenario.executions_per_hour


def test_public_ip_egress_prices_an_ipv4_address_a_task_hour_and_no_nat_gateway() -> None:
    lines, tasks, per_hour = _steady_lines()

    assert tasks == 55
    assert lines[IPV4_LINE] == pytest.approx(tasks * PUBLIC_IPV4_HOUR * 1e6 / per_hour, abs=5e-4), (
        "publicIp egress: $0.005 an hour for each task's public IPv4 address"
    )
    assert not [name for name in lines if "NAT" in name], "publicIp egress: no NAT gateway"


def test_nat_gateway_egress_prices_its_hour_and_bytes_and_no_task_address() -> None:
    lines, _, per_hour = _steady_lines("fargateEgress=natGateway")

    expected = NAT_HOUR * 1e6 / per_hour + NAT_BYTES_PER_EXECUTION * 1e6 / 1e9 * NAT_PER_GB
    assert lines[NAT_LINE] == pytest.approx(expected, abs=5e-4) == 0.193, (
        "natGateway egress: the gateway's hour and 4 KB an execution, as before"
    )
    assert IPV4_LINE not in lines, "natGateway egress: no public IP on the tasks"


def test_an_unknown_egress_is_refused_naming_the_knob() -> None:
    with pytest.raises(ProfileError, match=r"^-c fargateEgress: must be publicIp or natGateway"):
        load_profile("seed", ["fargateEgress=nat"]).design()
