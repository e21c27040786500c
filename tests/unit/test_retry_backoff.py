"""The backoff between attempts, computed: min(max_interval, initial * 2^attempt), where `attempt`
is the number of the attempt that just failed, and with full jitter a uniform draw below that
ceiling (takt.retry). With full jitter, a bound checked only from above lets any smaller exponent
pass; here each delay is compared with the formula for the same seeded draws (issue 28)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from takt.models.records import RetryPolicy
from takt.retry import backoff_delay

FORMULA = "backoff is min(max_interval, initial * 2^attempt) for the attempt that failed"
EXPONENTIAL = RetryPolicy(initial_interval="5s", max_interval="1h", jitter="none")
JITTERED = RetryPolicy(initial_interval="5s", max_interval="1h", jitter="full")
CAPPED = RetryPolicy(initial_interval="5s", max_interval="100s", jitter="none")


def _ceiling(policy: RetryPolicy, attempt: int) -> float:
    """The formula, written out here, not taken from takt."""
    initial, cap = policy.initial.total_seconds(), policy.maximum.total_seconds()
    return min(cap, initial * 2.0**attempt)


@pytest.mark.parametrize(("attempt", "seconds"), [(1, 10), (2, 20), (3, 40), (4, 80), (5, 160)])
def test_without_jitter_the_backoff_is_the_formula_for_the_attempt_that_failed(
    attempt: int, seconds: float
) -> None:
    # The seed's example: 5 s and attempt 5 wait 160 s.
    assert backoff_delay(EXPONENTIAL, attempt) == timedelta(seconds=seconds), FORMULA


@pytest.mark.parametrize(("attempt", "seconds"), [(4, 80), (5, 100), (9, 100)])
def test_the_backoff_never_exceeds_the_max_interval(attempt: int, seconds: float) -> None:
    assert backoff_delay(CAPPED, attempt) == timedelta(seconds=seconds), FORMULA


@pytest.mark.parametrize("attempt", range(1, 9))
def test_full_jitter_draws_below_the_formulas_ceiling_for_each_attempt(attempt: int) -> None:
    draws = random.Random(attempt)
    mirror = random.Random(attempt)
    ceiling = _ceiling(JITTERED, attempt)

    delays = [backoff_delay(JITTERED, attempt, rand=draws.random) for _ in range(200)]

    assert delays == [timedelta(seconds=ceiling * mirror.random()) for _ in range(200)], FORMULA
    # The largest of 200 uniform draws is above 95 % of the ceiling (with these seeds), so a
    # smaller exponent, whose every draw is below half of it, cannot pass.
    assert ceiling * 0.95 < max(d.total_seconds() for d in delays) <= ceiling, FORMULA


def test_full_jitters_top_draw_waits_the_whole_ceiling() -> None:
    assert backoff_delay(JITTERED, 3, rand=lambda: 1.0) == timedelta(seconds=40), FORMULA


def test_fixed_backoff_waits_the_initial_interval_whatever_the_attempt() -> None:
    fixed = RetryPolicy(backoff="fixed", initial_interval="30s", jitter="none")

    assert {backoff_delay(fixed, a) for a in range(1, 6)} == {timedelta(seconds=30)}, (
        "fixed backoff waits initial_interval after every attempt"
    )


def test_a_retry_after_is_a_lower_bound_capped_at_the_max_interval() -> None:
    small = backoff_delay(CAPPED, 1, retry_after=60)
    huge = backoff_delay(CAPPED, 1, retry_after=10_000)

    assert (small, huge) == (timedelta(seconds=60), timedelta(seconds=100)), (
        "a target's Retry-After raises the wait, never past max_interval"
    )
