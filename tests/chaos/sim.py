"""A deterministic, in-process run of takt's real functions on moto, second by second.

Each simulated second the ticker ticks (its claims run inline), the watchdog sweeps every
`sweep_every` seconds, and the worker takes what the lanes hold, one message at a time, as a
worker Lambda would: a message whose processing raises comes back after the visibility timeout,
one whose processing returns is deleted. Time is a `ManualClock` the scenario owns (each function
may see it through a skewed `OffsetClock`); nothing sleeps.

The functions run on clients of their own, so a scenario's faults (botocore hooks on those
clients, or the lane and delivery hooks here) never touch the checker's reads. Lanes are real SQS
queues on moto, sent with no delay: moto counts a delay in real seconds, so the intended delay is
kept here, in simulated time, and a received message waits for it, and for its scheduled time
(the worker holds an early message until then).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from takt.aws import AwsClients
from takt.clock import Clock, ManualClock
from takt.config import Settings
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.dispatch.lanes import LaneSender
from takt.dispatch.ticker import InlineFanout, Ticker
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import JobRecord, RetryPolicy
from takt.store.due import minute_of
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring import Services
from takt.worker.runner import ExecutionRunner, RunnerSettings, RunOutcome
from tests.chaos import handlers
from tests.chaos.oracle import expected_times
from tests.support.faults import Crash
from tests.support.history import EffectLog, Expect
from tests.support.jobs import TENANT, make_job, store_job

# How long a message whose processing raised stays invisible before SQS offers it again.
VISIBILITY_SEC = 10
# Seconds without ticks at the end of a run: what the last tick claimed ahead still runs.
DRAIN_SEC = 5
# What ends one invocation of a function, as in Lambda: an injected fault, or a bug a bad record
# trips (a value that does not parse); the scenario goes on and its verdict says what the failure
# cost. A failed assertion is the test's own and is never caught.
INVOCATION_ERRORS = (
    ClientError,
    BotoCoreError,
    ConnectionError,
    Crash,
    ValueError,
    KeyError,
    TypeError,
)

Deliver = Callable[[list[LaneMessage]], list[LaneMessage]]
"""What SQS does to the messages received in one second: drop, repeat or reorder them."""


class SimLanes(LaneSender):
    """A real lane sender whose delays are kept in simulated time, and which may lose messages
    (`lose` says which: the send call succeeds, the message never arrives)."""

    def __init__(
        self,
        client: Any,
        settings: Settings,
        clock: Clock,
        lose: Callable[[Outgoing], bool] | None = None,
    ) -> None:
        super().__init__(client, settings)
        self._clock = clock
        self._lose = lose
        self._visible: dict[str, deque[datetime]] = {}
        self.lost = 0
        self.sent = 0

    def send(self, outgoing: list[Outgoing]) -> int:
        kept = []
        for item in outgoing:
            if self._lose is not None and self._lose(item):
                self.lost += 1
                continue
            body = item.message.model_dump_json()
            at = self._clock.now() + timedelta(seconds=item.delay_sec)
            self._visible.setdefault(body, deque()).append(at)
            kept.append(replace(item, delay_sec=0))
        if kept:
            super().send(kept)
            self.sent += len(kept)
        return len(outgoing)

    def visible_at(self, body: str) -> datetime | None:
        """When a received message was meant to become visible (None for an unknown body)."""
        queue = self._visible.get(body)
        return queue.popleft() if queue else None


@dataclass
class Sim:
    """The run: build with `Sim.create`, add jobs with `add_job`, drive with `run`."""

    svc: Services  # the functions' view: fault clients, the true clock
    clock: ManualClock
    lanes: SimLanes
    runner: ExecutionRunner
    claimer: Claimer
    log: EffectLog
    worker_clock: Clock
    claimer_clock: Clock
    watchdog_clock: Clock
    deliver: Deliver | None = None
    sweep_every: int = 5
    inbox: list[tuple[datetime, LaneMessage]] = field(default_factory=list)
    outcomes: list[RunOutcome] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    jobs: list[JobRecord] = field(default_factory=list)
    ticks: int = 0
    last_tick: datetime | None = None

    @classmethod
    def create(
        cls,
        settings: Settings,
        clients: AwsClients,
        clock: ManualClock,
        log_dir: Path,
        *,
        worker_clock: Clock | None = None,
        claimer_clock: Clock | None = None,
        watchdog_clock: Clock | None = None,
        lose: Callable[[Outgoing], bool] | None = None,
        deliver: Deliver | None = None,
    ) -> Sim:
        svc = Services(settings=settings, clients=clients, clock=clock)
        lanes = SimLanes(clients.sqs, settings, clock, lose)
        worker_clock = worker_clock or clock
        runner = ExecutionRunner(
            RunnerSettings.of(settings),
            svc.jobs,
            svc.executions,
            lanes,
            svc.targets,
            worker_clock,
            worker_id="w-sim",
            sleep=lambda _: None,
        )
        claimer = Claimer(ClaimerSettings.of(settings), svc.jobs, svc.due, svc.executions, lanes)
        log = EffectLog(log_dir / "effects.jsonl")
        handlers.bind(log, clock)
        if svc.due.watermark() is None:
            # A deployment that has been ticking: the first tick need not sweep the last hour.
            svc.due.advance_watermark(minute_of(clock.now()) - timedelta(minutes=1))
        return cls(
            svc=svc,
            clock=clock,
            lanes=lanes,
            runner=runner,
            claimer=claimer,
            log=log,
            worker_clock=worker_clock,
            claimer_clock=claimer_clock or clock,
            watchdog_clock=watchdog_clock or clock,
            deliver=deliver,
        )

    def ticker(self) -> Ticker:
        return Ticker(
            self.svc.due,
            InlineFanout(self.claimer.claim, 1),
            self.svc.settings.max_catchup_buckets,
            timedelta(seconds=self.svc.settings.dispatch_ahead_sec),
        )

    def add_job(
        self,
        *,
        fail: bool = False,
        gate: str | None = None,
        hold_sec: float = 0.0,
        payload: dict[str, Any] | None = None,
        **fields: Any,
    ) -> JobRecord:
        """Store a job aimed at `chaos.effect`, written as the API writes it (index first).
        `gate` holds each call of its first attempt until the test opens it."""
        now = self.clock.now()
        if payload is None:
            payload = {"log": str(self.log.path), "fail": fail}
            if gate is not None:
                payload["gate"] = gate
            if hold_sec:
                payload["hold_sec"] = hold_sec
        fields.setdefault("retry", RetryPolicy(max_attempts=3, initial_interval="2s"))
        job = make_job(now=now, target="handler:chaos.effect", payload=payload, **fields)
        stored = store_job(self.svc, job, now)
        self.jobs.append(stored)
        return stored

    def run(self, seconds: int, step: int = 1) -> None:
        """Run `seconds` of simulated time, one tick every `step` seconds."""
        ticker = self.ticker()
        for _ in range(0, seconds, step):
            self.step(ticker, step)

    def step(self, ticker: Ticker, seconds: int = 1) -> None:
        self.last_tick = self.claimer_clock.now()
        self._guard("tick", lambda: ticker.tick(self.claimer_clock.now()))
        self.ticks += 1
        if self.ticks % max(1, self.sweep_every // seconds) == 0:
            self.sweep()
        self.receive()
        self.work()
        self.clock.advance(seconds)

    def restart(self) -> Sim:
        """Every function restarted (new processes, a new worker id); what SQS and DynamoDB
        hold survives, including messages not yet visible."""
        settings = self.svc.settings
        runner = ExecutionRunner(
            RunnerSettings.of(settings),
            self.svc.jobs,
            self.svc.executions,
            self.lanes,
            self.svc.targets,
            self.worker_clock,
            worker_id="w-sim-restarted",
            sleep=lambda _: None,
        )
        return replace(
            self,
            svc=Services(settings=settings, clients=self.svc.clients, clock=self.clock),
            runner=runner,
            claimer=Claimer(
                ClaimerSettings.of(settings),
                self.svc.jobs,
                self.svc.due,
                self.svc.executions,
                self.lanes,
            ),
        )

    def sweep(self) -> None:
        watchdog = Watchdog(
            WatchdogSettings.of(self.svc.settings),
            self.svc.jobs,
            self.svc.due,
            self.svc.executions,
            self.lanes,
        )
        self._guard("sweep", lambda: watchdog.sweep(self.watchdog_clock.now()))

    def receive(self) -> None:
        """Move what the lanes hold into the worker's inbox, through the delivery fault."""
        sqs = self.svc.clients.sqs
        url = self.svc.settings.lane_url("default")
        received: list[tuple[str, LaneMessage]] = []
        while True:
            resp = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
            messages = resp.get("Messages", [])
            if not messages:
                break
            received.extend(
                (m["Body"], LaneMessage.model_validate_json(m["Body"])) for m in messages
            )
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(messages)
                ],
            )
        now = self.clock.now()
        when = {message: self.lanes.visible_at(body) or now for body, message in received}
        delivered = [message for _, message in received]
        if self.deliver is not None:
            delivered = self.deliver(delivered)
        self.inbox.extend((when.get(m, now), m) for m in delivered)

    def work(self) -> None:
        """Process every message that is visible and whose time has come on the worker's clock."""
        now = self.clock.now()
        ready = [
            (at, m)
            for at, m in self.inbox
            if at <= now and m.scheduled_time <= self.worker_clock.now()
        ]
        for entry in ready:
            self.inbox.remove(entry)
        for _, message in ready:
            try:
                self.outcomes.append(self.runner.process(message))
            except INVOCATION_ERRORS as exc:
                self.errors[f"worker: {type(exc).__name__}"] += 1
                self.inbox.append((now + timedelta(seconds=VISIBILITY_SEC), message))

    def settle(self, seconds: int) -> None:
        """Healthy seconds after the faults: whatever a fault delayed finishes here. The last
        tick claimed a little ahead; those runs start at their time, with no tick after it,
        and a short retry of theirs still runs."""
        self.run(seconds)
        for _ in range(DRAIN_SEC):
            self.clock.advance(1)
            self.receive()
            self.work()

    def _guard(self, name: str, action: Callable[[], object]) -> None:
        try:
            action()
        except INVOCATION_ERRORS as exc:
            self.errors[f"{name}: {type(exc).__name__}"] += 1

    def expectations(self, horizon: datetime) -> list[Expect]:
        """What every job must have done by `horizon` (its last claim's reach): each occurrence
        from its first through `horizon` run, and the next one indexed. The occurrences are
        counted by the oracle (`expected_times`: on the anchor, or by croniter), not by takt."""
        out = []
        for job in self.jobs:
            first = job.next_run_time
            assert first is not None
            if job.interval is None and job.schedule is None:  # a one-off
                out.append(
                    Expect(job.job_id, [first] if first <= horizon else [], None, tenant_id=TENANT)
                )
                continue
            if job.interval is not None:
                assert job.interval.endswith("s")
                every: dict[str, Any] = {
                    "interval_sec": int(job.interval.removesuffix("s")),
                    "anchor": job.anchor,
                }
            else:
                every = {"cron": job.schedule, "zone": job.time_zone}
            run = expected_times(start=first, end=horizon, **every)
            after = expected_times(
                start=horizon + timedelta(microseconds=1), end=horizon + timedelta(days=1), **every
            )
            out.append(Expect(job.job_id, run, after[0], tenant_id=TENANT))
        return out

    def horizon(self) -> datetime:
        """The latest instant the last tick claimed up to."""
        assert self.last_tick is not None
        return self.last_tick + timedelta(seconds=self.svc.settings.dispatch_ahead_sec)


def interval_jobs(sim: Sim, count: int, rng: random.Random, **fields: Any) -> list[JobRecord]:
    """`count` jobs every 5-15 s, each first due within its first period."""
    jobs = []
    start = sim.clock.now()
    for _ in range(count):
        period = rng.randint(5, 15)
        first = start + timedelta(seconds=rng.randint(2, period + 1))
        jobs.append(
            sim.add_job(
                interval=f"{period}s",
                anchor=first,
                next_run_time=first,
                catchup="all",
                catchup_window="1h",
                **fields,
            )
        )
    return jobs
