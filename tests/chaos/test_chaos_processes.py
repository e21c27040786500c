"""Scenarios 5 and 6: process faults on real processes, judged by the same history checker.

`takt local --pollers 0` runs the API, the scheduler and the watchdog; two `takt worker`
processes (the e2e harness's) run the jobs. Each job fires a minute-free one-off whose first
start holds its call open; the worker running it is then

5. killed with SIGKILL mid-execution (a fresh worker replaces it), or
6. paused with SIGSTOP past its lease, then resumed once the other worker holds the next
   attempt, so its late report meets a newer lease.

The side-effect log is the handler's journal (each start, with its process and wall time). Each
worker reaches the tables through a recording proxy of its own (`tests.chaos.oracle.WireTap`),
so what a paused worker wrote after it resumed is seen on the wire, not taken from its logs or
from takt's count of refused reports.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from takt.clock import SystemClock
from takt.config import Settings
from takt.models.ids import format_time, split_execution_id
from takt.wiring import Services, build_services
from tests.chaos.conftest import Form, publish
from tests.chaos.oracle import WireTap, Write
from tests.e2e.harness import poll
from tests.e2e.test_e2e_workers import (
    CLOCK_MARGIN_SEC,
    LEASE_LOST_LINE,
    LEASE_SEC,
    RECOVERY_SLACK_SEC,
    WATCHDOG_SEC,
    Runtime,
    Worker,
    running_it,
    workerless_takt_local,
)
from tests.e2e.worker_handlers import read_journal
from tests.support.history import ChaosReport, Effect, Expect, HistoryChecker, judge


@pytest.fixture(params=[False, True], ids=["claim-writes", "lease-writes"])
def record_at_lease(request: pytest.FixtureRequest) -> bool:
    """Each scenario here both ways: the execution written by its claim, or by its lease."""
    return bool(request.param)


pytestmark = pytest.mark.e2e

DONE_WITHIN_SEC = 60.0
TENANT = "local"  # the identity `takt local` calls its API with
ACTORS: dict[int, str] = {}  # a worker's pid -> its actor on the wire tap


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    with workerless_takt_local(tmp_path_factory.mktemp("chaos-processes")) as started:
        yield started


@pytest.fixture(scope="module")
def tap(runtime: Runtime) -> Iterator[WireTap]:
    """The recording proxy every worker reaches the runtime's tables through."""
    env = runtime.worker_env
    wire = WireTap(env["TAKT_AWS_ENDPOINT_URL"], SystemClock(), env["TAKT_EXECUTIONS_TABLE"])
    yield wire
    wire.close()


@pytest.fixture(scope="module")
def workers(runtime: Runtime) -> Iterator[list[Worker]]:
    everyone: list[Worker] = []
    yield everyone
    for worker in everyone:
        worker.end()


def _pool(runtime: Runtime, workers: list[Worker], tap: WireTap) -> list[Worker]:
    """Two live workers, topped up; each reaches the tables through a port of `tap` of its
    own, the actor `_actor(worker)` names."""
    live = [w for w in workers if w.alive]
    fresh: list[Worker] = []
    for _ in range(2 - len(live)):
        actor = f"worker-{len(workers) + len(fresh)}"
        env = {**runtime.worker_env, "TAKT_AWS_ENDPOINT_URL": tap.endpoint(actor)}
        worker = Worker(replace(runtime, worker_env=env))
        ACTORS[worker.pid] = actor
        fresh.append(worker)
    workers.extend(fresh)
    for worker in fresh:
        worker.wait_ready()
    return [*live, *fresh]


def _services(runtime: Runtime) -> Services:
    with pytest.MonkeyPatch.context() as env:
        for name, value in runtime.worker_env.items():
            env.setenv(name, value)
        return build_services(Settings(), SystemClock())


def _effects(journal: Path, scheduled: dict[str, datetime]) -> list[Effect]:
    return [
        Effect(
            job_id=split_execution_id(e["execution_id"])[0],
            execution_id=e["execution_id"],
            attempt=e["attempt"],
            scheduled=scheduled[e["execution_id"]],
            at=datetime.fromtimestamp(e["at"], UTC),
        )
        for e in read_journal(journal)
        if e["event"] == "start"
    ]


def _schedule(runtime: Runtime, journal: Path, count: int, **payload: Any) -> list[Expect]:
    """`count` one-offs, 3 s from now, whose first start sleeps as `payload` says."""
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    expects = []
    for _ in range(count):
        job = runtime.takt.create_job(
            {
                "run_at": format_time(at),
                "target": "handler:e2e.sleep",
                "payload": {"journal": str(journal), **payload},
            }
        )
        expects.append(Expect(job["id"], [at], None, tenant_id=TENANT))
    return expects


def _starts(journal: Path, count: int) -> list[dict[str, Any]]:
    return poll(
        lambda: [e for e in read_journal(journal) if e["event"] == "start"],
        lambda starts: len(starts) >= count,
        DONE_WITHIN_SEC,
        f"{count} handler starts",
    )


def _all_done(runtime: Runtime, expects: list[Expect], done: Any) -> None:
    def executions(job_id: str) -> Callable[[], list[dict[str, Any]]]:
        return lambda: runtime.takt.executions(job_id)

    for expect in expects:
        poll(
            executions(expect.job_id),
            lambda items: bool(items) and all(done(i) for i in items),
            DONE_WITHIN_SEC,
            "the executions' end",
        )


def _report(
    runtime: Runtime, name: str, form: Form, expects: list[Expect], journal: Path
) -> ChaosReport:
    checker = HistoryChecker(_services(runtime))
    scheduled = {
        r.execution_id: r.scheduled_time
        for e in expects
        for r in checker.executions(e.tenant_id, e.job_id)
    }
    report = ChaosReport(scenario=name, seed=0, form=form.name)
    return judge(checker, report, expects, _effects(journal, scheduled))


def test_s5_workers_killed_mid_execution_lose_nothing_and_complete_once(
    runtime: Runtime, workers: list[Worker], tap: WireTap, form: Form, tmp_path: Path
) -> None:
    journal = tmp_path / "journal.jsonl"
    expects: list[Expect] = []
    recoveries = []
    for round_ in range(form.pick(1, 4)):
        pool = _pool(runtime, workers, tap)
        expects += _schedule(runtime, journal, 1, first_sec=60)
        started = _starts(journal, 2 * round_ + 1)[-1]
        victim, _ = running_it(pool, started)
        victim.process.kill()
        killed_at = time.time()
        victim.process.wait(timeout=10)
        recoveries.append(_starts(journal, 2 * round_ + 2)[-1]["at"] - killed_at)
    _all_done(runtime, expects, lambda e: e["state"] == "succeeded")

    report = _report(runtime, "s5_worker_kill_9", form, expects, journal)
    report.faults = {"kill_9": len(expects)}
    report.recovery_sec = round(max(recoveries), 2)  # from the kill to the next start
    publish(report)

    assert report.problems() == []
    assert report.effects_per_occurrence == {"2": len(expects)}  # the killed call, then one more
    assert report.recovery_sec <= LEASE_SEC + CLOCK_MARGIN_SEC + WATCHDOG_SEC + RECOVERY_SLACK_SEC


def _looked_after_resume(
    worker: Worker, job_id: str, tap: WireTap, resumed: datetime
) -> list[Write]:
    """Wait until the resumed `worker` has acted on its run of `job_id`: it logged that it
    stopped unreported (lease lost), or it wrote something. Its writes since `resumed`, as the
    wire saw them, are what is judged; the log line only says when to look."""

    def seen() -> tuple[bool, list[Write]]:
        logged = any(
            LEASE_LOST_LINE in line and job_id in line for line in worker.output().splitlines()
        )
        writes = [w for w in tap.writes if w.actor == ACTORS[worker.pid] and w.sent >= resumed]
        return logged, writes

    return poll(
        seen, lambda now: now[0] or bool(now[1]), DONE_WITHIN_SEC, "the resumed worker's look"
    )[1]


def test_s6_workers_paused_past_their_lease_stop_on_resume_and_report_nothing(
    runtime: Runtime, workers: list[Worker], tap: WireTap, form: Form, tmp_path: Path
) -> None:
    journal = tmp_path / "journal.jsonl"
    expects: list[Expect] = []
    recoveries = []
    after_resume: list[Write] = []
    for round_ in range(form.pick(1, 4)):
        pool = _pool(runtime, workers, tap)
        [expect] = _schedule(runtime, journal, 1, first_sec=2, then_sec=1)
        expects.append(expect)
        started = _starts(journal, 2 * round_ + 1)[-1]
        paused, _ = running_it(pool, started)
        paused.process.send_signal(signal.SIGSTOP)
        stopped_at = time.time()
        # The other worker has the next attempt: resume the paused one into a newer lease.
        recoveries.append(_starts(journal, 2 * round_ + 2)[-1]["at"] - stopped_at)
        resumed_at = datetime.now(UTC)
        paused.process.send_signal(signal.SIGCONT)
        _all_done(runtime, [expect], lambda e: e["state"] == "succeeded")
        # On its own clock the paused worker's lease expired long ago: it stops, unreported.
        after_resume.extend(_looked_after_resume(paused, expect.job_id, tap, resumed_at))

    report = _report(runtime, "s6_worker_sigstop", form, expects, journal)
    report.faults = {"sigstop": len(expects)}
    report.recovery_sec = round(max(recoveries), 2)  # from the pause to the next start
    report.extra = {"writes_after_resume": len(after_resume)}
    publish(report)

    assert report.problems() == []
    assert after_resume == [], "a paused worker past its lease writes nothing once resumed"
    assert report.effects_per_occurrence == {"2": len(expects)}
    assert report.takt_fenced == 0  # takt's account: no report of it was refused either
