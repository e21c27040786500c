"""The process's foreground (`takt.parallel.Foreground`): bulk work that gives way waits while
foreground work runs, at most its limit, and goes on as soon as the last foreground work ends."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from takt.parallel import Foreground

GIVES_WAY = "bulk work gives way to the foreground while it runs, and only then (issue 28)"


def test_bulk_work_gives_way_only_while_foreground_work_runs() -> None:
    foreground = Foreground()
    idle = foreground.give_way(0)
    with foreground.running():
        with foreground.running():
            nested = foreground.give_way(0)
        still = foreground.give_way(0)
    after = foreground.give_way(0)

    assert (idle, nested, still, after) == (True, False, False, True), GIVES_WAY


def test_bulk_work_waiting_goes_on_when_the_foreground_ends() -> None:
    foreground = Foreground()
    with ThreadPoolExecutor(1) as pool:
        with foreground.running():
            waiting = pool.submit(foreground.give_way, 60)
            held = waiting.done()
        released = waiting.result(timeout=30)

    assert (held, released) == (False, True), GIVES_WAY
