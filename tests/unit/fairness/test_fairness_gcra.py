"""The token bucket's arithmetic (GCRA), as a pure function of its state."""

from __future__ import annotations

from takt.store.buckets import gcra, latest_tat

SEC = 1_000_000
NOW = 1_000 * SEC


def test_a_new_bucket_grants_its_whole_burst_at_once() -> None:
    granted, tat, wait = gcra(0, NOW, want=50, rate=5.0, burst=10)
    assert (granted, wait) == (10, 0.0)
    assert tat == NOW + 2 * SEC  # ten tokens at five a second


def test_an_empty_bucket_grants_nothing_and_says_when_the_next_token_is_due() -> None:
    _, tat, _ = gcra(0, NOW, want=10, rate=5.0, burst=10)
    granted, same, wait = gcra(tat, NOW, want=1, rate=5.0, burst=10)
    assert granted == 0
    assert same == tat
    assert abs(wait - 0.2) < 1e-6


def test_tokens_come_back_at_the_rate() -> None:
    _, tat, _ = gcra(0, NOW, want=10, rate=5.0, burst=10)
    granted, _, _ = gcra(tat, NOW + SEC, want=10, rate=5.0, burst=10)
    assert granted == 5


def test_a_long_idle_bucket_holds_no_more_than_its_burst() -> None:
    granted, _, _ = gcra(NOW - 3600 * SEC, NOW, want=100, rate=5.0, burst=10)
    assert granted == 10


def test_over_any_window_grants_stay_within_rate_times_window_plus_burst() -> None:
    tat, total = 0, 0
    for step in range(1000):  # a taker asking for 3 tokens every 10 ms, for 10 s
        granted, tat, _ = gcra(tat, NOW + step * 10_000, want=3, rate=20.0, burst=5)
        total += granted
    assert total <= 20 * 10 + 5
    assert total >= 20 * 10 - 1


def test_the_adds_limit_is_the_latest_tat_that_still_holds_the_tokens() -> None:
    for rate, burst, want in [(50.0, 100, 1), (5.0, 10, 3), (3.0, 7, 7), (1.0, 20, 1)]:
        limit = latest_tat(NOW, want, rate, burst)
        at_limit, _, _ = gcra(limit, NOW, want=want, rate=rate, burst=burst)
        past_it, _, _ = gcra(limit + 1, NOW, want=want, rate=rate, burst=burst)
        assert (at_limit, past_it) == (want, want - 1), (
            "the bucket's add grants its tokens exactly while gcra would: "
            f"rate {rate}, burst {burst}, {want} wanted: {at_limit} at the limit, {past_it} past it"
        )
