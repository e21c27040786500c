"""Fixtures for the worker tests: jobs and executions aimed at the test handlers, a runner, and a
unique key per test for the handlers' gates and call records."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import ExecutionRecord, JobStatus
from takt.wiring import Services
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.integration.worker import handlers
from tests.support.jobs import TENANT, make_execution, make_job, store_execution

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

Submit = Callable[..., tuple[ExecutionRecord, LaneMessage]]


def submit_to(
    svc: Services, clock: ManualClock, target: str, payload: Any = None, **job_fields: Any
) -> tuple[ExecutionRecord, LaneMessage]:
    """A fired one-off job calling `target`, and its pending execution with its lane message."""
    attempt = int(job_fields.pop("attempt", 1))
    job = make_job(
        now=clock.now(),
        next_run_time=None,
        run_at=NOON,
        target=target,
        payload=payload,
        status=JobStatus.COMPLETED,
        **job_fields,
    )
    svc.jobs.create(job)
    record = store_execution(
        svc, make_execution(job, NOON, clock.now(), attempt=attempt), clock.now()
    )
    return record, Outgoing.of(record).message


def runner_for(
    svc: Services, worker_id: str = "w-1", monotonic: Callable[[], float] = time.monotonic
) -> ExecutionRunner:
    """The worker's runner on `svc`; `monotonic` is the clock its lease's local expiry is
    measured on (a test's manual clock, to step past it without sleeping)."""
    return ExecutionRunner(
        RunnerSettings.of(svc.settings),
        svc.jobs,
        svc.executions,
        svc.lanes,
        svc.targets,
        svc.clock,
        worker_id=worker_id,
        notifier=svc.notifier,
        monotonic=monotonic,
    )


def stored(svc: Services, record: ExecutionRecord) -> ExecutionRecord:
    return svc.executions.get(TENANT, record.execution_id)


@pytest.fixture
def key() -> Iterator[str]:
    """A name of this test's own for the handlers; its gate is opened at teardown, so no
    handler thread outlives the test by more than a moment."""
    name = uuid.uuid4().hex
    yield name
    handlers.gate(name).set()


@pytest.fixture
def submit(svc: Services, clock: ManualClock) -> Submit:
    def make(
        target: str, payload: Any = None, **job_fields: Any
    ) -> tuple[ExecutionRecord, LaneMessage]:
        return submit_to(svc, clock, target, payload, **job_fields)

    return make
