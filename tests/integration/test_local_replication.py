"""Global tables emulated between two region processes (`takt_cli.local.replication`).

Each region is a process of its own with its own moto, as under `takt local --regions`: the
stamps live in a process, and moto's models are process-wide. The tables are read raw with
boto3 in both regions; nothing here asks the replicator what it did.
"""

from __future__ import annotations

import itertools
import multiprocessing
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from takt_cli.local.runtime import free_port
from tests.e2e.harness import poll
from tests.integration.replication_region import DELAY_MS, TABLE, serve_region

REGIONS = ("us-east-1", "us-east-2")
_SENTINELS = itertools.count()


def _client(endpoint: str, region: str) -> Any:
    return boto3.session.Session(
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).client("dynamodb", endpoint_url=endpoint)


@pytest.fixture(scope="module")
def regions() -> Iterator[dict[str, Any]]:
    """Both regions running; their DynamoDB clients by region."""
    context = multiprocessing.get_context("spawn")
    ports = {region: free_port() for region in REGIONS}
    endpoints = {region: f"http://127.0.0.1:{port}" for region, port in ports.items()}
    stop = context.Event()
    started = []
    for region in REGIONS:
        ready = context.Event()
        peers = {other: url for other, url in endpoints.items() if other != region}
        process = context.Process(
            target=serve_region, args=(region, ports[region], peers, ready, stop), daemon=True
        )
        process.start()
        started.append((region, process, ready))
    for region, _, ready in started:
        assert ready.wait(60), f"region {region} did not start"
    yield {region: _client(url, region) for region, url in endpoints.items()}
    stop.set()
    for _, process, _ in started:
        # Nothing of theirs is kept: ending them at once saves their servers' orderly stop.
        process.kill()
        process.join(10)


def _value(client: Any, key: str) -> str | None:
    item = client.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True)
    found = item.get("Item")
    return None if found is None else str(found["v"]["S"])


def _shows(client: Any, key: str, value: str | None, what: str) -> None:
    poll(lambda: _value(client, key), lambda seen: seen == value, 10, what)


def _put(client: Any, key: str, value: str) -> None:
    client.put_item(TableName=TABLE, Item={"pk": {"S": key}, "v": {"S": value}})


def _passed(source: Any, target: Any, key: str) -> None:
    """Wait until every write `source` made so far has reached `target`: a write made after
    them in `source` arrives after them (each peer's writes are applied in order). Each call
    has a sentinel of its own: one already in `target` (its own, or an earlier call's) would
    show at once, before `source`'s writes arrived."""
    sentinel = f"{key}-sentinel-{next(_SENTINELS)}"
    _put(source, sentinel, "after")
    _shows(target, sentinel, "after", "sentinel replicated")


def test_a_write_in_one_region_shows_in_the_other_after_the_replication_delay(
    regions: dict[str, Any],
) -> None:
    east1, east2 = regions["us-east-1"], regions["us-east-2"]
    written = time.monotonic()
    _put(east1, "one", "from-east-1")
    _shows(east2, "one", "from-east-1", "replicated write")
    seen_after = time.monotonic() - written
    assert seen_after >= DELAY_MS / 1000 - 0.05, (
        f"replication delay: the write showed in the peer after {seen_after:.3f} s, "
        f"before the {DELAY_MS} ms delay"
    )


def test_concurrent_writes_converge_to_the_last_writer_in_every_region(
    regions: dict[str, Any],
) -> None:
    east1, east2 = regions["us-east-1"], regions["us-east-2"]
    _put(east1, "both", "first")
    # Later, in the other region, before the first write has arrived there (within the same
    # millisecond the region names decide, and us-east-2 orders after us-east-1).
    east2.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "both"}},
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"S": "last"}},
    )
    _passed(east1, east2, "both")
    _passed(east2, east1, "both")
    assert (_value(east1, "both"), _value(east2, "both")) == ("last", "last"), (
        "last writer wins: both regions must hold the later write"
    )


def test_a_delete_replicates_and_an_older_write_does_not_bring_the_item_back(
    regions: dict[str, Any],
) -> None:
    east1, east2 = regions["us-east-1"], regions["us-east-2"]
    _put(east1, "gone", "kept")
    _shows(east2, "gone", "kept", "replicated write")
    _put(east1, "gone", "older")
    east2.delete_item(TableName=TABLE, Key={"pk": {"S": "gone"}})
    _passed(east1, east2, "gone")
    _passed(east2, east1, "gone")
    assert (_value(east1, "gone"), _value(east2, "gone")) == (None, None), (
        "last writer wins over deletes: the delete replicates, and its tombstone keeps the "
        "older write from bringing the item back"
    )


def test_a_replicated_write_is_marked_with_its_region_in_the_peers_stream(
    regions: dict[str, Any],
) -> None:
    east1, east2 = regions["us-east-1"], regions["us-east-2"]
    _put(east1, "marked", "x")
    _shows(east2, "marked", "x", "replicated write")
    streams = boto3.session.Session(
        region_name="us-east-2", aws_access_key_id="testing", aws_secret_access_key="testing"
    ).client("dynamodbstreams", endpoint_url=east2.meta.endpoint_url)
    arn = east2.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator)["Records"]
    regions_of = [r["awsRegion"] for r in records if r["dynamodb"]["Keys"]["pk"]["S"] == "marked"]
    assert regions_of == ["us-east-1"], (
        "never re-replicate: the replicated write is marked with its own region in the peer's "
        f"stream, so the peer does not pass it on (saw {regions_of})"
    )
