"""The claimer function's parts: the claimer of one (minute bucket, shard) partition."""

from __future__ import annotations

from dataclasses import dataclass

from takt.aws import AwsClients
from takt.clock import Clock
from takt.config import Settings
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.fairness.adaptive import LaneGauge
from takt.models.regions import Fence
from takt.wiring.lanes import lane_sender
from takt.wiring.stores import (
    calendar_store,
    due_store,
    execution_store,
    job_store,
    quarantine_store,
    token_buckets,
)


@dataclass(frozen=True)
class ClaimerFunction:
    claimer: Claimer
    clock: Clock


def build_claimer(
    settings: Settings, clients: AwsClients, clock: Clock, fence: Fence | None = None
) -> ClaimerFunction:
    gauge = None
    if settings.claim_max_items is not None and settings.fair_queue_sec is not None:
        gauge = LaneGauge(clients.sqs, settings.lane_urls)
    claimer = Claimer(
        ClaimerSettings.of(settings),
        job_store(settings, clients.dynamodb),
        due_store(settings, clients.dynamodb),
        execution_store(settings, clients.dynamodb),
        lane_sender(settings, clients, clock, token_buckets(settings, clients.dynamodb)),
        calendar_store(settings, clients.dynamodb),
        gauge,
        quarantine_store(settings, clients.dynamodb),
        fence=fence,
    )
    return ClaimerFunction(claimer, clock)
