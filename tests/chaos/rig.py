"""A rig of takt's real functions, each an actor with clients of its own behind the oracle's
wire tap, aimed at the oracle's witness target.

Each actor (a worker, the watchdog, the claimer) reaches moto through its own port of the
`WireTap`, so every write it sends to the executions table is recorded as its own; each may run
on a clock of its own (a skewed `OffsetClock`), whose offset the tap is told so lease expiries are
read on the true clock. Jobs call the `Witness` over real HTTP. Messages travel on the real SQS
lanes: `receive` takes what a lane holds with a visibility timeout, as an event source mapping
does, and `duplicate` puts a copy of a message back, as SQS's at-least-once delivery may.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from takt.aws import AwsClients, make_clients
from takt.clock import Clock, OffsetClock
from takt.config import Settings
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.dispatch.ticker import InlineFanout, Ticker
from takt.models.lanes import LaneMessage
from takt.models.records import JobRecord, RetryPolicy
from takt.store.due import minute_of
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring import Services
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.chaos.oracle import Call, Expectation, Verdict, WireTap, Witness, judge_run, table_items
from tests.support.history import ChaosReport
from tests.support.jobs import make_job, store_job


@dataclass(frozen=True)
class Received:
    """A message as SQS handed it to a consumer."""

    message: LaneMessage
    body: str
    receipt: str


@dataclass
class Rig:
    settings: Settings
    clock: Clock
    tap: WireTap
    witness: Witness
    clients: AwsClients  # the checker's own, never tapped
    jobs: list[JobRecord] = field(default_factory=list)
    _clients: dict[str, AwsClients] = field(default_factory=dict)

    def services(self, actor: str, offset_sec: float = 0.0) -> Services:
        """Services for `actor`: clients through its own tap port (made once: a client costs
        a few hundred milliseconds), its clock `offset_sec` off."""
        settings = self.settings.model_copy(
            update={"aws_endpoint_url": self.tap.endpoint(actor, offset_sec)}
        )
        if actor not in self._clients:
            self._clients[actor] = make_clients(settings)
        clock = OffsetClock(self.clock, offset_sec) if offset_sec else self.clock
        return Services(settings=settings, clients=self._clients[actor], clock=clock)

    def worker(
        self,
        name: str,
        *,
        offset_sec: float = 0.0,
        sleep: Callable[[float], None] | None = None,
    ) -> ExecutionRunner:
        svc = self.services(name, offset_sec)
        return ExecutionRunner(
            RunnerSettings.of(svc.settings),
            svc.jobs,
            svc.executions,
            svc.lanes,
            svc.targets,
            svc.clock,
            worker_id=name,
            sleep=sleep or (lambda _: None),
        )

    def watchdog(self, offset_sec: float = 0.0) -> tuple[Watchdog, Services]:
        svc = self.services("watchdog", offset_sec)
        return Watchdog(
            WatchdogSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes
        ), svc

    def ticker(self) -> Ticker:
        svc = self.services("claimer")
        if svc.due.watermark() is None:
            svc.due.advance_watermark(minute_of(self.clock.now()) - timedelta(minutes=1))
        claimer = Claimer(
            ClaimerSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes
        )
        return Ticker(
            svc.due,
            InlineFanout(claimer.claim, 1),
            svc.settings.max_catchup_buckets,
            timedelta(seconds=svc.settings.dispatch_ahead_sec),
        )

    def add_job(self, next_run_time: datetime, **fields: Any) -> JobRecord:
        """A job aimed at the witness, stored as the API stores it (due item first)."""
        fields.setdefault("retry", RetryPolicy(max_attempts=3, initial_interval="2s"))
        svc = Services(settings=self.settings, clients=self.clients, clock=self.clock)
        job = make_job(
            now=self.clock.now(), next_run_time=next_run_time, target=self.witness.url, **fields
        )
        stored = store_job(svc, job, self.clock.now())
        self.jobs.append(stored)
        return stored

    def receive(self, visibility_sec: int = 30, lane: str = "default") -> list[Received]:
        """What the lane holds now, received (not deleted) with `visibility_sec`."""
        resp = self.clients.sqs.receive_message(
            QueueUrl=self.settings.lane_url(lane),
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            VisibilityTimeout=visibility_sec,
        )
        return [
            Received(LaneMessage.model_validate_json(m["Body"]), m["Body"], m["ReceiptHandle"])
            for m in resp.get("Messages", [])
        ]

    def delete(self, received: Received, lane: str = "default") -> None:
        self.clients.sqs.delete_message(
            QueueUrl=self.settings.lane_url(lane), ReceiptHandle=received.receipt
        )

    def duplicate(self, received: Received, lane: str = "default") -> None:
        """SQS's at-least-once delivery: the same message once more."""
        self.clients.sqs.send_message(
            QueueUrl=self.settings.lane_url(lane), MessageBody=received.body
        )

    def calls(self) -> list[Call]:
        return self.witness.calls

    def judge(
        self,
        report: ChaosReport,
        expectations: list[Expectation],
        *,
        fault_end: datetime | None = None,
    ) -> Verdict:
        return judge_run(
            report,
            expectations,
            self.witness.calls,
            self.tap.writes,
            table_items(self.clients.dynamodb, self.settings.executions_table),
            offsets=self.tap.offsets,
            margin_sec=self.settings.clock_margin_sec,
            fault_end=fault_end,
        )
