"""Width: a task with many downstream tasks and a task with as many upstream tasks, through the
real claimer, lanes and terminal hook on moto. The task executions are finished by a fast worker
(`complete`: the worker's terminal write and hook, no target call).

`make test` runs them 100 wide; `TAKT_WORKFLOW_WIDTH=1000` runs the 1,000-wide form (about a
CPU-minute each on moto). The fast worker finishes one execution at a time: moto's server does
not apply concurrent `ADD`s to one item atomically (DynamoDB does), and a lost decrement of the
fan-in counter would leave the run to the watchdog's backstop, which these tests do not run
(tests/integration/test_workflow_crash.py does). bench/workflow_fanout.py runs the same shapes
through the real workers of the local runtime.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.models.records import ExecState, ExecutionRecord
from takt.wiring import Services
from takt.workflows import engine
from tests.support.workflows import complete, fire, run_of, states, store_workflow, task

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DUE = NOON + timedelta(minutes=1)
WIDTH = int(os.environ.get("TAKT_WORKFLOW_WIDTH", "100"))


def test_a_wide_fan_out_dispatches_every_downstream_once(svc: Services, clock: ManualClock) -> None:
    leaves = [f"leaf{i:04d}" for i in range(WIDTH)]
    tasks = [task("fan-out", "root"), *(task("fan-out", leaf, "root") for leaf in leaves)]
    clock.set(DUE)
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)

    finished = complete(svc, threads=1)

    assert len(finished) == WIDTH + 1
    assert set(finished.values()) == {1}
    assert run_of(svc, run).state == ExecState.SUCCEEDED
    assert set(states(svc, run).values()) == {"succeeded"}


def test_a_wide_fan_in_runs_the_sink_once_after_the_last_upstream(
    svc: Services, clock: ManualClock
) -> None:
    roots = [f"src{i:04d}" for i in range(WIDTH)]
    tasks = [*(task("fan-in", r) for r in roots), task("fan-in", "sink", *roots)]
    clock.set(DUE)
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)

    finished = complete(svc, threads=1)

    assert len(finished) == WIDTH + 1
    assert set(finished.values()) == {1}
    assert f"{run.execution_id}~sink~0" in finished
    assert run_of(svc, run).state == ExecState.SUCCEEDED


class Yielding:
    """Stands for the process's foreground: records what the fan-out had dispatched each time it
    gave way (`takt.parallel.Foreground.give_way`)."""

    def __init__(self, svc: Services, run: ExecutionRecord) -> None:
        self.svc, self.run = svc, run
        self.dispatched_at_each: list[int] = []

    def give_way(self, limit_sec: float) -> bool:
        pending = [s for s in states(self.svc, self.run).values() if s == "pending"]
        self.dispatched_at_each.append(len(pending))
        return True


def test_a_wide_fan_out_gives_way_to_the_foreground_between_chunks_and_still_runs_every_task(
    svc: Services, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunk = 4
    monkeypatch.setattr(engine, "CHUNK", chunk, raising=False)
    width = chunk * 2 + 1
    tasks = [task("yield", "root"), *(task("yield", f"leaf{i:04d}", "root") for i in range(width))]
    clock.set(DUE)
    run = fire(svc, store_workflow(svc, tasks, NOON, DUE), DUE)
    foreground = Yielding(svc, run)
    monkeypatch.setattr(engine, "FOREGROUND", foreground, raising=False)

    finished = complete(svc, threads=1)

    assert foreground.dispatched_at_each == [chunk, chunk * 2], (
        "a wide step gives way to the foreground (takt local's tick) between chunks, not before "
        "the first: the fan-out neighbour (issue 28)"
    )
    assert (len(finished), set(finished.values())) == (width + 1, {1})
    assert run_of(svc, run).state == ExecState.SUCCEEDED
