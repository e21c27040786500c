"""The lanes and the worker's gate in front of them, each made the one way every builder makes
it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from takt.aws import AwsClients
from takt.clock import Clock
from takt.config import Settings
from takt.dispatch.lanes import LaneSender
from takt.fairness.gate import WorkerGate, running_check
from takt.fairness.shares import DispatchShares
from takt.store.buckets import TokenBuckets
from takt.store.executions import ExecutionStore
from takt.store.running_slots import RunningSlots

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def lane_sender(
    settings: Settings, clients: AwsClients, clock: Clock, buckets: TokenBuckets
) -> LaneSender:
    """The lanes, with weighted fair dispatch when the deployment turns it on."""
    route = None
    if settings.fair_dispatch_per_sec is not None:
        route = DispatchShares(settings, buckets, clock).route
    return LaneSender(clients.sqs, settings, route)


def worker_gate(
    settings: Settings,
    dynamodb: DynamoDBClient,
    clock: Clock,
    buckets: TokenBuckets,
    executions: ExecutionStore,
) -> WorkerGate:
    return WorkerGate(
        settings,
        buckets,
        RunningSlots(dynamodb, settings.tenants_table),
        clock,
        running_check(executions),
    )
