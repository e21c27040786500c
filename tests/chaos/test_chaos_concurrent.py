"""Scenario 17: the claimer, three workers and the watchdog at once, in real time, on real SQS
semantics, judged by the oracle alone (tests/chaos/oracle.py).

Every function runs in a thread of its own on the system clock, each behind its own port of the
wire tap. The claimer ticks four times a second, the watchdog sweeps twice a second, and each
worker consumes the lane as Lambda's event source mapping does: it receives a batch with the
lane's visibility timeout (3 s), runs it through the worker's own `ConcurrentBatchProcessor`,
and deletes what the partial batch response does not name; a failed message comes back when its
visibility ends and, received five times, goes to the dead-letter queue. Faults, where AWS
makes them:

- some calls take 5 s: longer than the visibility timeout (the message is delivered to another
  worker while the first still runs) and than the watchdog's resend wait (it finds the live lease);
- some targets fail their first attempt (a fixed 2 s retry);
- SQS delivers a fifth of the messages twice (a copy after the first is consumed);
- one worker's DynamoDB writes fail 10 % of the time (throttling the SDK retries, conflicts it
  does not: a partial batch failure, redelivered);
- a fourth worker is a real `takt worker` process, killed with `kill -9` as soon as it holds a
  lease (its call in flight), and started again (short: one kill; full: two);
- edits race the claims: one-off jobs created through the API (and indexed by the real indexer)
  are paused, deleted or moved ten minutes on through the API between 0.2 and 1.5 s before their
  time, inside the claim's 2 s reach; untouched one-offs beside them are the controls.

The verdict: every occurrence from the first through the last tick (intervals by arithmetic on
the anchor) reached its target; no call before its time less the margin; one accepted completion
per execution, from its lease holder; no live lease taken over; no retry before its backoff;
no edited one-off whose edit was acknowledged before its time reached its target, and every
control did.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from takt.api.jobs import JobService
from takt.api.models import JobCreate, JobPatch
from takt.aws import AwsClients
from takt.clock import SystemClock
from takt.models.lanes import LaneMessage
from takt.models.records import RetryPolicy
from takt.watchdog.sweeper import Watchdog
from takt.wiring import Services
from takt.worker.batch import ConcurrentBatchProcessor
from takt.worker.runner import ExecutionRunner
from takt_cli.local.runtime import worker_env
from tests.chaos.conftest import Form, publish
from tests.chaos.oracle import Call, Expectation, WireTap, Witness, expected_times, table_items
from tests.chaos.rig import Rig
from tests.support.env import fresh_settings
from tests.support.faults import RandomWriteFaults
from tests.support.indexer import index_due
from tests.support.jobs import TENANT
from tests.support.receiver import Reply
from tests.support.threads import poll_until

VISIBILITY_SEC = 3
PROCESS_ACTOR = "worker-proc"
SETTLE_SEC = 120  # after the last tick, for what the faults delayed
ENDED = frozenset({"succeeded", "failed", "dead", "cancelled", "skipped"})
ROOT = Path(__file__).resolve().parents[2]
SLOW_SEC = 5.0
RETRY_SEC = 2


class Plan:
    """How each job's target answers: fast, slow (5 s) on its first call, or failing its first
    attempt."""

    def __init__(self) -> None:
        self.kind: dict[str, str] = {}

    def __call__(self, call: Call, before: int) -> Reply:
        kind = self.kind.get(call.job_id, "fast")
        if kind == "slow" and before == 0:
            return Reply(delay_sec=SLOW_SEC)
        if kind == "flaky" and call.attempt == 1:
            return Reply(status=500)
        return Reply()


class Loop:
    """A function's loop in a thread: `step` every `every_sec` until stopped; its errors are
    counted (an invocation that fails is retried by the next one, as in Lambda)."""

    def __init__(self, name: str, step: Callable[[], None], every_sec: float) -> None:
        self.errors = 0
        self._stop = threading.Event()
        self._step = step
        self._every = every_sec
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Loop:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._step()
            except Exception:  # noqa: BLE001 - a failed invocation; the next one carries on
                self.errors += 1
            self._stop.wait(self._every)


class Consumer:
    """A worker fed as Lambda's SQS event source mapping feeds it."""

    def __init__(
        self, name: str, rig: Rig, runner: ExecutionRunner, rng: random.Random, copies: float
    ) -> None:
        self.name = name
        self._rig = rig
        self._runner = runner
        self._rng = rng
        self._copies = copies
        self.batches = 0
        self.failed_items = 0
        self.copies_sent = 0

    def step(self) -> None:
        sqs = self._rig.clients.sqs
        url = self._rig.settings.lane_url("default")
        resp = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=5,
            WaitTimeSeconds=1,
            AttributeNames=["ApproximateReceiveCount"],
        )
        messages = resp.get("Messages", [])
        if not messages:
            return
        self.batches += 1
        event = {
            "Records": [
                {
                    "messageId": m["MessageId"],
                    "receiptHandle": m["ReceiptHandle"],
                    "body": m["Body"],
                    "attributes": m.get("Attributes", {}),
                    "messageAttributes": {},
                    "md5OfBody": m["MD5OfBody"],
                    "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:lane",
                    "awsRegion": "us-east-1",
                }
                for m in messages
            ]
        }

        def handle(record: SQSRecord) -> str:
            return self._runner.process(LaneMessage.model_validate_json(record.body)).state

        processor = ConcurrentBatchProcessor(event_type=EventType.SQS, concurrency=5)
        result = process_partial_response(event=event, record_handler=handle, processor=processor)
        failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
        self.failed_items += len(failed)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        for m in done:
            if self._rng.random() < self._copies:
                sqs.send_message(QueueUrl=url, MessageBody=m["Body"])
                self.copies_sent += 1


def _sweep(watchdog: Watchdog, now: datetime) -> None:
    watchdog.sweep(now)


class KilledWorker:
    """`takt worker` processes behind the tap's `worker-proc` port, each killed with SIGKILL
    once the tap sees it granted a lease; `step` starts the next one until `kills` are done."""

    def __init__(self, rig: Rig, logs: Path, kills: int) -> None:
        settings = rig.settings.model_copy(
            update={"aws_endpoint_url": rig.tap.endpoint(PROCESS_ACTOR)}
        )
        self._env = {
            **os.environ,
            **worker_env(settings),
            "TAKT_CLOCK_MARGIN_SEC": str(settings.clock_margin_sec),
            "PYTHONPATH": str(ROOT),
        }
        self._rig = rig
        self._logs = logs
        self._left = kills
        self._process: subprocess.Popen[bytes] | None = None
        self._grants_seen = 0
        self.killed_at: list[datetime] = []

    def step(self) -> None:
        if self._process is None:
            if self._left:
                self._start()
            return
        grants = [w for w in self._rig.tap.writes if w.actor == PROCESS_ACTOR and w.grant]
        if len(grants) > self._grants_seen and grants[-1].accepted:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(30)
            self.killed_at.append(self._rig.clock.now())
            self._grants_seen = len(grants)
            self._process = None
            self._left -= 1

    def stop(self) -> None:
        if self._process is not None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(30)

    def _start(self) -> None:
        log = self._logs / f"takt-worker-{len(self.killed_at)}.log"
        with log.open("wb") as sink:
            self._process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "takt_cli.commands.main", "worker"),
                    *("--concurrency", "1", "--log-level", "WARNING"),
                ],
                cwd=ROOT,
                env=self._env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )


class Editor:
    """Edits through the API, each at its instant: `step` makes those whose time has come and
    records when the API acknowledged each (its call returned)."""

    def __init__(self, api: JobService, clock: SystemClock) -> None:
        self._api = api
        self._clock = clock
        self._planned: list[tuple[datetime, str, str, datetime]] = []
        self.acknowledged: dict[str, datetime] = {}
        self.kinds: dict[str, str] = {}

    def plan(self, at: datetime, job_id: str, kind: str, due: datetime) -> None:
        self._planned.append((at, job_id, kind, due))
        self.kinds[job_id] = kind

    def step(self) -> None:
        now = self._clock.now()
        for entry in [p for p in self._planned if p[0] <= now]:
            self._planned.remove(entry)
            _, job_id, kind, due = entry
            if kind == "deleted":
                self._api.delete(TENANT, job_id)
            elif kind == "paused":
                self._api.update(TENANT, job_id, JobPatch(status="paused"), None)
            else:
                moved = JobPatch(run_at=due + timedelta(minutes=10))
                self._api.update(TENANT, job_id, moved, None)
            self.acknowledged[job_id] = self._clock.now()


@pytest.fixture
def rig(moto_endpoint: str, clients: AwsClients) -> Iterator[tuple[Rig, Plan]]:
    """The rig on the system clock, with a lane whose visibility timeout is short."""
    clock = SystemClock()
    settings = fresh_settings(
        clients,
        moto_endpoint,
        due_shards=1,
        open_shards=1,
        lease_sec=4.0,
        heartbeat_sec=1.0,
        clock_margin_sec=1.0,
        pending_resend_after_sec=3.0,
        dispatch_ahead_sec=2.0,
    )
    clients.sqs.set_queue_attributes(
        QueueUrl=settings.lane_url("default"),
        Attributes={"VisibilityTimeout": str(VISIBILITY_SEC)},
    )
    plan = Plan()
    tap = WireTap(moto_endpoint, clock, settings.executions_table)
    with Witness(clock, plan) as witness:
        try:
            yield Rig(settings, clock, tap, witness, clients), plan
        finally:
            tap.close()


def test_s17_claimers_workers_and_watchdogs_at_once_on_real_sqs(
    rig: tuple[Rig, Plan],
    clients: AwsClients,
    form: Form,
    seed: int,
    report_for: Any,
    tmp_path: Path,
) -> None:
    the_rig, plan = rig
    rng = random.Random(seed)
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    kinds = ["fast", "slow", "flaky"]
    intervals: dict[str, tuple[int, datetime, str]] = {}
    for i in range(form.pick(6, 9)):
        period = rng.randint(3, 6)
        anchor = start + timedelta(seconds=rng.randint(0, period - 1))
        kind = kinds[i % len(kinds)]
        job = the_rig.add_job(
            anchor,
            interval=f"{period}s",
            anchor=anchor,
            catchup="all",
            catchup_window="1h",
            retry=RetryPolicy(
                max_attempts=4, backoff="fixed", initial_interval=f"{RETRY_SEC}s", jitter="none"
            ),
        )
        plan.kind[job.job_id] = kind
        intervals[job.job_id] = (period, anchor, kind)

    api = JobService(the_rig.services("api").api)
    edits = Editor(api, SystemClock())
    one_offs: dict[str, datetime] = {}
    for i in range(form.pick(9, 16)):
        due = start + timedelta(seconds=rng.randint(4, form.pick(18, 55)))
        job, _ = api.create(TENANT, JobCreate(run_at=due, target=the_rig.witness.url), None)
        one_offs[job.job_id] = due
        kind = ("control", "paused", "deleted", "moved")[i % 4]
        if kind != "control":
            edits.plan(due - timedelta(seconds=rng.uniform(0.2, 1.5)), job.job_id, kind, due)
    index_due(Services(settings=the_rig.settings, clients=clients, clock=the_rig.clock))

    ticker = the_rig.ticker()
    last_tick: list[datetime] = []

    def tick() -> None:
        now = the_rig.clock.now()
        ticker.tick(now)
        last_tick.append(now)

    watchdog, watchdog_svc = the_rig.watchdog()
    consumers = []
    faults = []
    for name in ("worker-a", "worker-b", "worker-c"):
        runner = the_rig.worker(name, sleep=time.sleep)
        if name == "worker-c":
            faults.append(
                RandomWriteFaults(the_rig.services(name).clients.dynamodb, seed=seed, rate=0.1)
            )
        consumers.append(Consumer(name, the_rig, runner, random.Random(f"{seed}-{name}"), 0.2))
    loops = {
        **{c.name: Loop(c.name, c.step, 0) for c in consumers},
        "watchdog": Loop("watchdog", lambda: _sweep(watchdog, watchdog_svc.clock.now()), 0.5),
        "api": Loop("api", edits.step, 0.02),
    }
    killed = KilledWorker(the_rig, tmp_path, form.pick(1, 2))
    loops["worker-proc"] = Loop("worker-proc", killed.step, 0.05)
    for loop in loops.values():
        loop.start()
    claimer = Loop("claimer", tick, 0.25).start()
    run_sec = form.pick(20, 60)
    idle = threading.Event()
    idle.wait(max(0.0, (start - the_rig.clock.now()).total_seconds()) + run_sec)
    claimer.stop()
    stopped = last_tick[-1]
    ahead = timedelta(seconds=the_rig.settings.dispatch_ahead_sec + 1)

    expectations = [
        Expectation(
            job_id,
            expected_times(start=anchor, end=stopped, interval_sec=period, anchor=anchor),
            may=expected_times(
                start=stopped + timedelta(microseconds=1),
                end=stopped + ahead,
                interval_sec=period,
                anchor=anchor,
            ),
            retry_fixed_sec=float(RETRY_SEC),
        )
        for job_id, (period, anchor, _) in intervals.items()
    ]
    for job_id, due in one_offs.items():
        acked = edits.acknowledged.get(job_id)
        if job_id not in edits.kinds:
            expectations.append(Expectation(job_id, [due]))
        elif acked is not None and acked < due:
            expectations.append(Expectation(job_id, [], must_not=[due]))
        else:  # the edit came too late to decide: either is right
            expectations.append(Expectation(job_id, [], may=[due]))
    must = {(e.job_id, t) for e in expectations for t in e.must}

    def settled() -> bool:
        called = {(c.job_id, c.scheduled) for c in the_rig.witness.calls}
        if not must <= called:
            return False
        items = table_items(the_rig.clients.dynamodb, the_rig.settings.executions_table)
        return all(i["state"]["S"] in ENDED for i in items)

    try:
        # The report says what did not settle (missed, unfinished): it is judged either way.
        with contextlib.suppress(AssertionError):
            poll_until(settled, "every occurrence called and ended", timeout_sec=SETTLE_SEC)
    finally:
        for loop in loops.values():
            loop.stop()
        killed.stop()
        for fault in faults:
            fault.__exit__(None, None, None)

    report = report_for("s17_concurrent_real_sqs")
    verdict = the_rig.judge(report, expectations)
    report.faults = {
        "copies_sent": sum(c.copies_sent for c in consumers),
        "batch_item_failures": sum(c.failed_items for c in consumers),
        "refused_writes": {k: v for f in faults for k, v in f.refused.items()},
        "invocation_errors": {name: loop.errors for name, loop in loops.items()},
        "takt_worker_kill_9": len(killed.killed_at),
        "slow_call_sec": SLOW_SEC,
        "visibility_sec": VISIBILITY_SEC,
    }
    late_edits = [
        j for j, k in edits.kinds.items() if not edits.acknowledged.get(j, due) < one_offs[j]
    ]
    report.extra.update(
        {
            "run_sec": run_sec,
            "jobs": {k: v[2] for k, v in intervals.items()},
            "edits": {
                "made": dict(Counter(edits.kinds.values())),
                "acknowledged_before_due": len(edits.kinds) - len(late_edits),
                "acknowledged_after_due": len(late_edits),
                "lead_sec": {
                    j: (one_offs[j] - at).total_seconds() for j, at in edits.acknowledged.items()
                },
                "controls": len(one_offs) - len(edits.kinds),
            },
        }
    )
    publish(report)

    assert report.problems() == []
    assert verdict.live_takeovers == []
    assert verdict.early_calls == []
    assert report.occurrences > 0
    assert len(killed.killed_at) == form.pick(1, 2)
