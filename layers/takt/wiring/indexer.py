"""The indexer function's parts: the due index's writer, fed by the jobs table's stream."""

from __future__ import annotations

import functools
import json

from takt.aws import AwsClients, make_lambda_client
from takt.clock import Clock
from takt.config import Settings
from takt.dispatch.indexer import DueIndexer
from takt.dispatch.rest import Waker
from takt.store.due import DueStore
from takt.wiring.stores import due_store, job_store, quarantine_store

# What a woken driver is started with: no `time`, so it claims no minute's start.
WAKE_EVENT = json.dumps({"wake": True}).encode()


def build_indexer(settings: Settings, clients: AwsClients, clock: Clock) -> DueIndexer:
    due = due_store(settings, clients.dynamodb)
    return DueIndexer(
        due,
        clock,
        job_store(settings, clients.dynamodb),
        quarantine_store(settings, clients.dynamodb),
        _waker(settings, due, clock),
    )


def _waker(settings: Settings, due: DueStore, clock: Clock) -> Waker | None:
    """With resting drivers, what starts one: an asynchronous invocation of the scheduler."""
    if not settings.driver_rest:
        return None
    if not settings.scheduler_function:
        raise RuntimeError("TAKT_SCHEDULER_FUNCTION is required with TAKT_DRIVER_REST")
    function = settings.scheduler_function
    # Made at the first wake, not at the indexer's cold start; an asynchronous invocation, so
    # the client retries as the others do (`make_lambda_client` without a read timeout).
    client = functools.cache(lambda: make_lambda_client(settings, None))

    def start_driver() -> None:
        client().invoke(FunctionName=function, InvocationType="Event", Payload=WAKE_EVENT)

    return Waker(due, clock, start_driver)
