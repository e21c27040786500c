"""The claimer's line of the cost breakdown follows the claim the model times (issue 26): Lambda
bills each claim's wall time at the claimer's memory and each invocation, and a million
executions take a million / the claim's size claims."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from takt_cli.capacity.model import CallProfile, Design
from takt_cli.capacity.scenarios import SEED, all_in_cost, profile_components

CAPACITY = Path(__file__).resolve().parents[3] / "docs" / "CAPACITY.md"
GB_SECOND = 0.0000133334  # Lambda arm64, us-east-1
REQUEST = 0.20 / 1e6


def _claimer_line(calls: CallProfile, metered: dict[str, float]) -> tuple[str, float]:
    """The steady seed hour's claimer line (its name and $/M), as shipped."""
    breakdown = all_in_cost(SEED[0], Design(), calls, metered)["usd_per_million_breakdown"]
    (line,) = [(name, usd) for name, usd in breakdown.items() if name.startswith("Lambda claimer")]
    return line


def test_the_claimer_line_is_the_steady_hours_claims_billed_by_their_wall_time() -> None:
    calls = CallProfile()
    # A local run's metered claimer line (its small claims) is replaced, not added to.
    metered = {**profile_components(calls), "Lambda claimer": 0.53}

    usd, _ = calls.claimer_usd_per_million(1400, Design())
    name, line = _claimer_line(calls, metered)

    # 1,400/s over the 64 partitions of an 84,000-item minute: claims of 21.875 items.
    items = 1400 / 64
    # Its wall time: the query and the first write (2 x 6 ms), three 6 ms writes an item 32 at
    # a time, three SendMessageBatch of 10 ms 32 at a time, and 3.2 ms of CPU an item at the
    # one vCPU 1,769 MB buys.
    wall_sec = (2 * 6 + items * 3 * 6 / 32 + 3 * 10 / 32 + items * 3.2) / 1000
    claims = 1e6 / items
    by_hand = claims * REQUEST + claims * wall_sec * 1769 / 1024 * GB_SECOND
    assert usd == pytest.approx(by_hand, rel=1e-3), (
        "the claimer's line is its claims' requests and wall time in GB-seconds at 1,769 MB"
    )
    assert line == pytest.approx(by_hand, abs=5e-4), "the breakdown's line is the model's"
    assert name == "Lambda claimer (claims of 21.9 items, 95 ms each at 1769 MB)"


def test_a_cut_in_the_claims_cpu_per_item_lowers_the_claimer_line_by_its_gb_seconds() -> None:
    calls = CallProfile()
    cut = replace(calls, claimer_cpu_ms_per_item=calls.claimer_cpu_ms_per_item / 2)

    before, _ = calls.claimer_usd_per_million(1400, Design())
    after, _ = cut.claimer_usd_per_million(1400, Design())
    total_before = all_in_cost(SEED[0], Design(), calls, profile_components(calls))
    total_after = all_in_cost(SEED[0], Design(), cut, profile_components(cut))

    # Each of a million items bills 1.6 ms less at 1,769 MB, whatever the claims' size.
    saved = 1e6 * 1.6 / 1000 * 1769 / 1024 * GB_SECOND
    assert before - after == pytest.approx(saved, rel=1e-6), (
        "a cut in the claimer's CPU per item lowers the claimer's line by the GB-seconds it saves"
    )
    assert (
        _claimer_line(calls, profile_components(calls))[1]
        > (_claimer_line(cut, profile_components(cut))[1])
    ), "the scenario's breakdown follows the claimer's CPU"
    assert total_before["usd_per_million_executions"] - total_after[
        "usd_per_million_executions"
    ] == pytest.approx(saved, abs=0.01), "and so does the price `takt bench simulate` reports"


def test_the_claimers_memory_is_the_profiles() -> None:
    calls = CallProfile()
    half = replace(Design(), claimer_memory_mb=884)

    at_one_vcpu, _ = calls.claimer_usd_per_million(1400, Design())
    at_half, detail = calls.claimer_usd_per_million(1400, half)

    # Half the memory halves the price of a GB-second but doubles the CPU's time: only the
    # waits get cheaper.
    items = 1400 / 64
    waits_sec = (2 * 6 + items * 3 * 6 / 32 + 3 * 10 / 32) / 1000
    saved = 1e6 / items * waits_sec * (1769 - 884) / 1024 * GB_SECOND
    assert at_one_vcpu - at_half == pytest.approx(saved, rel=1e-2), (
        "the claimer is billed at the memory the profile gives it (functionMemoryMb.claimer)"
    )
    assert detail.endswith("at 884 MB")


def test_capacity_docs_claimer_row_is_the_models_steady_hour() -> None:
    """docs/CAPACITY.md, "Cost per million, component by component": the claimer's row."""
    usd, detail = CallProfile().claimer_usd_per_million(1400, Design())
    doc = " ".join(CAPACITY.read_text().split())

    row = f"| Lambda claimer ({detail.replace('1769 MB', '1,769 MB')}) | {usd:.2f} | {usd:.2f} |"
    assert row in doc, "the docs' claimer row is the model's steady seed hour"
