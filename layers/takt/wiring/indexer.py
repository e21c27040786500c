"""The indexer function's parts: the due index's writer, fed by the jobs table's stream."""

from __future__ import annotations

from takt.aws import AwsClients
from takt.clock import Clock
from takt.config import Settings
from takt.dispatch.indexer import DueIndexer
from takt.wiring.stores import due_store, job_store, quarantine_store


def build_indexer(settings: Settings, clients: AwsClients, clock: Clock) -> DueIndexer:
    return DueIndexer(
        due_store(settings, clients.dynamodb),
        clock,
        job_store(settings, clients.dynamodb),
        quarantine_store(settings, clients.dynamodb),
    )
