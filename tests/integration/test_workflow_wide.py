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

from takt.clock import ManualClock
from takt.models.records import ExecState
from takt.wiring import Services
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
