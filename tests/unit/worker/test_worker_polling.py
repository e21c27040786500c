"""`takt worker`'s lane order (weighted, never starving a lane) and its host deadline."""

from __future__ import annotations

import threading
import time
from collections import Counter

from takt.worker.deadline import HostDeadline
from takt.worker.process import DEFAULT_WEIGHTS, LanePicker

LANES = ("high", "default", "low")


def test_rounds_start_with_each_lane_in_proportion_to_its_weight() -> None:
    picker = LanePicker(LANES, DEFAULT_WEIGHTS)

    firsts = Counter(picker.order()[0] for _ in range(7 * 10))

    assert firsts == {"high": 40, "default": 20, "low": 10}


def test_the_lowest_lane_leads_a_round_at_least_once_in_every_cycle() -> None:
    picker = LanePicker(LANES, DEFAULT_WEIGHTS)

    firsts = [picker.order()[0] for _ in range(70)]

    assert all("low" in firsts[i : i + 7] for i in range(0, 70, 7))


def test_a_round_falls_through_the_other_lanes_in_priority_order() -> None:
    picker = LanePicker(LANES, DEFAULT_WEIGHTS)

    orders = [picker.order() for _ in range(7)]

    assert ["high", "default", "low"] in orders
    assert ["default", "high", "low"] in orders
    assert ["low", "high", "default"] in orders


def test_lanes_without_a_weight_share_equally() -> None:
    picker = LanePicker(("a", "b"), {})

    assert Counter(picker.order()[0] for _ in range(10)) == {"a": 5, "b": 5}


def test_a_host_deadline_wakes_the_runs_watching_it_and_only_moves_earlier() -> None:
    host = HostDeadline()
    woken = threading.Event()
    assert not host.passed()

    with host.watch(woken):
        host.set(time.monotonic() + 60)
    later = host.at
    host.set(time.monotonic() + 600)

    assert woken.is_set()
    assert host.at == later
    assert HostDeadline.after(-1).passed()
