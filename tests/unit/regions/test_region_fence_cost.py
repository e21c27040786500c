"""docs/CAPACITY.md's line on the region fence's cost: its figures recomputed from the default
renew period and the listed write price, so the doc cannot drift from either."""

from __future__ import annotations

from pathlib import Path

from takt.config import Settings
from takt_cli.capacity.prices import US_EAST_1

CAPACITY = Path(__file__).resolve().parents[3] / "docs" / "CAPACITY.md"


def test_the_capacity_doc_states_the_fence_s_writes_and_their_price() -> None:
    renew_sec = Settings().region_renew_sec
    per_hour = round(3600 / renew_sec)
    price = US_EAST_1.dynamodb_write_unit_per_million / 1e6
    line = next(x for x in CAPACITY.read_text().splitlines() if x.startswith("**The region fence"))

    expected = (
        f"({renew_sec:g} s: {per_hour} writes an hour, ${per_hour * price:.5f} an hour",
        f"10 warm processes add {10 * per_hour:,} lease writes (${10 * per_hour * price:.4f}",
    )
    assert all(part in line for part in expected), (
        f"the fence's cost line must say {expected}: a warm process renews once per renew period"
    )
