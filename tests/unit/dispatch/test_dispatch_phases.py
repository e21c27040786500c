"""A claim's phases: each phase's writes at once, the next phase only after all of them."""

from __future__ import annotations

import contextvars
import threading

import pytest

from takt.dispatch.claimer import ClaimResult, Phases

CALLER = contextvars.ContextVar("caller", default="none")


class WriteError(Exception):
    pass


def test_a_phase_runs_its_actions_at_the_same_time() -> None:
    # Four actions that each wait for all four: they finish only if they run at once.
    together = threading.Barrier(4, timeout=10)

    def action(item: int) -> int:
        together.wait()
        return item * 2

    assert Phases(threads=4).each(action, [1, 2, 3, 4], ClaimResult()) == [2, 4, 6, 8]


def test_a_failure_is_raised_only_after_every_action_of_its_phase_finished() -> None:
    finished: list[int] = []
    others = threading.Barrier(3, timeout=10)

    def action(item: int) -> None:
        if item == 0:
            raise WriteError
        others.wait()
        finished.append(item)

    with pytest.raises(WriteError):
        Phases(threads=4).each(action, [0, 1, 2, 3], ClaimResult())
    assert sorted(finished) == [1, 2, 3]


def test_one_thread_runs_in_order_and_stops_at_the_first_failure() -> None:
    seen: list[int] = []

    def action(item: int) -> None:
        seen.append(item)
        if item == 2:
            raise WriteError

    with pytest.raises(WriteError):
        Phases(threads=1).each(action, [1, 2, 3], ClaimResult())
    assert seen == [1, 2]


def test_actions_see_the_callers_context_and_their_cpu_is_counted() -> None:
    result = ClaimResult()
    CALLER.set("claim")

    def action(item: int) -> str:
        sum(range(20_000))
        return f"{CALLER.get()}-{threading.current_thread().name.split('_')[0]}-{item}"

    seen = Phases(threads=2).each(action, [1, 2], result)

    assert seen == ["claim-claim-write-1", "claim-claim-write-2"]
    assert result.helper_cpu_sec > 0
