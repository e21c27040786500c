"""Lane order on the real dispatch path: jobs of every priority claimed by the claimer, sent to
their lanes, and run by `takt worker`'s loop with one slot. Rounds start 4:2:1 (high, default,
low) while every lane has work, so the low lane is served within every seven rounds."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from takt.clock import ManualClock
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.models.ids import split_execution_id
from takt.store.due import minute_of
from takt.wiring import Services
from takt.worker.process import WorkerOptions, WorkerProcess
from tests.integration.worker import handlers
from tests.integration.worker.conftest import runner_for
from tests.support.jobs import job_id_in_shard, make_job, store_job

PER_LANE = 7
DEADLINE_SEC = 20.0


@pytest.fixture
def key() -> Iterator[str]:
    """This test's own name for the test handlers' call records."""
    name = uuid.uuid4().hex
    yield name
    handlers.gate(name).set()


def test_higher_lanes_go_first_and_the_low_lane_is_never_starved(
    svc: Services, clock: ManualClock, key: str
) -> None:
    lane_of: dict[str, str] = {}
    for lane in ("low", "default", "high"):  # the low lane's jobs are due first
        for _ in range(PER_LANE):
            job = make_job(
                now=clock.now(),
                next_run_time=clock.now(),
                job_id=job_id_in_shard("tenant-a", 0, svc.settings.due_shards),
                target="handler:it.ok",
                payload={"key": key},
                priority=lane,
            )
            store_job(svc, job, clock.now())
            lane_of[job.job_id] = lane
    Claimer(ClaimerSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes).claim(
        minute_of(clock.now()), 0, clock.now()
    )

    process = WorkerProcess(
        svc.settings, svc.clients.sqs, runner_for(svc), WorkerOptions(concurrency=1)
    )
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    idle = threading.Event()  # never set: its timed wait is the poll interval
    try:
        for _ in range(int(DEADLINE_SEC / 0.05)):
            if len(handlers.calls(key)) == 3 * PER_LANE:
                break
            idle.wait(0.05)
    finally:
        process.stop()
        thread.join(timeout=DEADLINE_SEC)

    order = [lane_of[split_execution_id(c.execution_id)[0]] for c in handlers.calls(key)]
    assert len(order) == 3 * PER_LANE
    assert "low" in order[:7]  # never starved: served within the first cycle
    last_high = max(i for i, lane in enumerate(order) if lane == "high")
    last_low = max(i for i, lane in enumerate(order) if lane == "low")
    assert last_high < last_low  # yet high drains ahead of low
    assert order[:7].count("high") >= 3
