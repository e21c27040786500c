"""The worker function's parts: the runner, with every target kind and the gate in front of it."""

from __future__ import annotations

from dataclasses import dataclass

from takt.aws import AwsClients
from takt.clock import Clock
from takt.config import Settings
from takt.models.regions import Fence
from takt.wiring.lanes import lane_sender, worker_gate
from takt.wiring.stores import execution_store, job_store, token_buckets
from takt.wiring.targets import notifier, signed_http_target, target_router
from takt.worker.runner import ExecutionRunner, RunnerSettings


@dataclass(frozen=True)
class WorkerFunction:
    runner: ExecutionRunner
    # How many of a batch's messages run at once, and how long before the function's own
    # timeout an unfinished execution is given back.
    batch_concurrency: int
    give_back_margin_sec: float


def build_worker(
    settings: Settings, clients: AwsClients, clock: Clock, fence: Fence | None = None
) -> WorkerFunction:
    jobs = job_store(settings, clients.dynamodb)
    executions = execution_store(settings, clients.dynamodb)
    buckets = token_buckets(settings, clients.dynamodb)
    http = signed_http_target(settings, clients, clock)
    runner = ExecutionRunner(
        RunnerSettings.of(settings),
        jobs,
        executions,
        lane_sender(settings, clients, clock, buckets),
        target_router(settings, clients, http),
        clock,
        gate=worker_gate(settings, clients.dynamodb, clock, buckets, executions),
        notifier=notifier(settings, clients, jobs, http),
        fence=fence,
    )
    return WorkerFunction(runner, settings.worker_batch_concurrency, settings.give_back_margin_sec)
