"""The clocks a worker's lease is measured on, and the settings that make a lease usable.

A worker acts only while its lease has more than the clock margin left, measured on a monotonic
clock (DESIGN invariant 10): the test clock's monotonic time must never run backwards when its
wall clock is set back, and settings whose lease leaves no time past the margin are refused.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from takt.clock import ManualClock
from takt.config import Settings

NOON = datetime(2026, 3, 2, 12, tzinfo=UTC)


def test_the_manual_clocks_monotonic_time_follows_advances_and_forward_sets() -> None:
    clock = ManualClock(NOON)

    clock.advance(2.5)
    clock.set(NOON + timedelta(seconds=10))

    assert clock.monotonic() == 10.0


def test_the_manual_clocks_monotonic_time_stands_still_when_the_wall_clock_goes_back() -> None:
    clock = ManualClock(NOON)
    clock.advance(5)

    clock.set(NOON - timedelta(minutes=1))
    clock.advance(1)

    assert (clock.now(), clock.monotonic()) == (NOON - timedelta(seconds=59), 6.0)


@pytest.mark.parametrize(("lease", "margin"), [(2.0, 2.0), (1.5, 2.0)])
def test_a_lease_not_longer_than_the_clock_margin_is_refused(lease: float, margin: float) -> None:
    with pytest.raises(ValidationError, match="lease_sec"):
        Settings(lease_sec=lease, clock_margin_sec=margin)


def test_a_lease_longer_than_the_margin_is_accepted() -> None:
    settings = Settings(lease_sec=2.5, clock_margin_sec=2.0)

    assert settings.lease_sec - settings.clock_margin_sec == 0.5
