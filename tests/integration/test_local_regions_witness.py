"""The witness of `takt local --regions` keeps one lease table for every region, as an MRSC
global table is one table: moto alone would keep a table per region of the request's signature."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from takt.resources import REGIONS
from takt_cli.local.regions import one_region
from takt_cli.local.runtime import _moto_server, free_port


@pytest.fixture(scope="module")
def witness() -> Iterator[str]:
    port = free_port()
    server = _moto_server("127.0.0.1", port, functools.partial(one_region, region="us-east-1"))
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def _client(endpoint: str, region: str) -> Any:
    return boto3.session.Session(
        region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing"
    ).client("dynamodb", endpoint_url=endpoint)


def test_every_region_reads_and_writes_the_one_lease_table_on_the_witness(witness: str) -> None:
    east1, east2 = _client(witness, "us-east-1"), _client(witness, "us-east-2")
    east1.create_table(**REGIONS.create_table_kwargs("takt-regions"))
    east2.put_item(
        TableName="takt-regions", Item={"pk": {"S": "lease"}, "holder": {"S": "us-east-2"}}
    )

    item = east1.get_item(
        TableName="takt-regions", Key={"pk": {"S": "lease"}}, ConsistentRead=True
    ).get("Item")

    assert item is not None and item["holder"]["S"] == "us-east-2", (
        "one lease table for every region: us-east-1 reads what us-east-2 wrote on the witness"
    )
