"""The token bucket's arithmetic (GCRA), as a pure function of its state."""

from __future__ import annotations

from takt.store.buckets import gcra

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
