"""Running the real due indexer over the jobs table's stream, as the `indexer` function does in
the cloud and the local runtime's stream thread does under `takt local`.

Tests that create or change jobs through the API and then expect the scheduler to fire them
call `index_due` in between: the API writes only jobs, and nothing else puts their due items.
"""

from __future__ import annotations

from typing import Any

import boto3

from takt.dispatch.indexer import IndexResult
from takt.wiring import Services
from takt_cli.local.streams import StreamReader

# One reader per jobs table (each test has its own), one streams client per endpoint.
_readers: dict[str, StreamReader] = {}
_clients: dict[str | None, Any] = {}


def index_due(svc: Services) -> IndexResult:
    """Index every change of `svc`'s jobs table since the last call (from its first change)."""
    table = svc.settings.jobs_table
    if table not in _readers:
        _readers[table] = _reader(svc)
    return svc.indexer.index_all(_readers[table].read())


def stream_records(svc: Services) -> list[dict[str, Any]]:
    """Every record of `svc`'s jobs stream from its start, read by a reader of their own."""
    return _reader(svc).read()


def _reader(svc: Services) -> StreamReader:
    endpoint = svc.settings.aws_endpoint_url
    if endpoint not in _clients:
        _clients[endpoint] = boto3.session.Session(region_name=svc.settings.region).client(
            "dynamodbstreams", endpoint_url=endpoint
        )
    return StreamReader(svc.clients.dynamodb, _clients[endpoint], svc.settings.jobs_table)
