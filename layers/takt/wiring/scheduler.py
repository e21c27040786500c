"""The scheduler function's parts: the per-second driver and the ticker it drives."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

import boto3

from takt.aws import AwsClients, ClientObserver
from takt.clock import Clock
from takt.config import Settings
from takt.dispatch.claimer import Claimer, ClaimerSettings, claim_horizon
from takt.dispatch.driver import Driver
from takt.dispatch.rest import Rest
from takt.dispatch.ticker import ClaimCall, Fanout, InlineFanout, LambdaFanout, Ticker
from takt.models.regions import Fence
from takt.store.due import DueStore
from takt.wiring.claimer import build_claimer
from takt.wiring.stores import due_store


class Instrument(ClientObserver, Protocol):
    """What `takt bench` hooks into the services it builds (takt_cli.metering.Meter): it
    observes the clients' requests and wraps each inline claim to time it."""

    def metered_claim(self, claim: ClaimCall) -> ClaimCall: ...


@dataclass(frozen=True)
class SchedulerFunction:
    due: DueStore
    ticker: Ticker
    driver: Driver
    clock: Clock
    # With `driver_rest`: whether a driver may end its invocation early (`takt.dispatch.rest`).
    rest: Rest | None = None


def build_scheduler(
    settings: Settings,
    clients: AwsClients,
    clock: Clock,
    meter: Instrument | None = None,
    claimer: Claimer | None = None,
    fence: Fence | None = None,
) -> SchedulerFunction:
    """The per-second driver and its ticker. Inline, the ticker claims in this process (with
    `claimer`, or one of its own); in lambda mode it invokes the claimer function per partition
    that has something due."""
    due = due_store(settings, clients.dynamodb)
    ahead = timedelta(seconds=settings.dispatch_ahead_sec)
    horizon = ClaimerSettings.of(settings)
    fanout: Fanout
    if settings.claimer_mode == "lambda":
        if not settings.claimer_function:
            raise RuntimeError("TAKT_CLAIMER_FUNCTION is required in lambda claimer mode")
        fanout = LambdaFanout(
            boto3.session.Session(region_name=settings.region).client("lambda"),
            settings.claimer_function,
            lambda task: due.has_due(
                task.minute, task.shard, claim_horizon(horizon, task.minute, task.now)
            ),
            settings.claimer_threads,
        )
    else:
        claim: ClaimCall = (claimer or build_claimer(settings, clients, clock, fence).claimer).claim
        if meter is not None:
            claim = meter.metered_claim(claim)
        fanout = InlineFanout(claim, settings.claimer_threads)
    burst_ahead = timedelta(seconds=settings.burst_ahead_sec)
    ticker = Ticker(due, fanout, settings.max_catchup_buckets, ahead, burst_ahead)
    rest = Rest(due, settings.max_catchup_buckets) if settings.driver_rest else None
    return SchedulerFunction(due, ticker, Driver(due, ticker, clock, fence), clock, rest)
