"""The local runtime's moto server keeps no copy of what a read returned, and forgets a stream's
shard iterators when DynamoDB would (its memory stays flat under a steady read load:
`takt_cli.local.moto_retention`)."""

from __future__ import annotations

import gc
import uuid
from typing import TYPE_CHECKING

import boto3
import pytest
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodbstreams.models import ShardIterator

from takt.aws import AwsClients
from takt_cli.local import moto_retention
from takt_cli.local.moto_retention import ITERATOR_LIFETIME_SEC, IteratorExpiry

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import WriteRequestTypeDef

ITEMS = 20
READS = 10


def _live(kind: type) -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj) is kind)


def test_reads_leave_no_item_alive_in_moto_so_local_memory_stays_flat(clients: AwsClients) -> None:
    db = clients.dynamodb
    table = f"retention-{uuid.uuid4().hex[:8]}"
    db.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        puts: list[WriteRequestTypeDef] = [
            {"PutRequest": {"Item": {"pk": {"S": f"k{i}"}, "v": {"S": "x" * 100}}}}
            for i in range(ITEMS)
        ]
        db.batch_write_item(RequestItems={table: puts})
        before = _live(Item)
        for _ in range(READS):
            assert len(db.scan(TableName=table)["Items"]) == ITEMS
            db.query(
                TableName=table,
                KeyConditionExpression="pk = :k",
                ExpressionAttributeValues={":k": {"S": "k0"}},
            )
        grown = _live(Item) - before
    finally:
        db.delete_table(TableName=table)
    assert grown < ITEMS, (
        f"local memory stays flat under reads: {READS} scans of {ITEMS} items left {grown} "
        "more moto items alive (moto keeps every copy a read made)"
    )


def test_shard_iterators_are_forgotten_15_minutes_after_they_were_handed_out(
    clients: AwsClients, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    elapsed = [0.0]
    monkeypatch.setattr(moto_retention, "EXPIRY", IteratorExpiry(lambda: elapsed[0]))
    db = clients.dynamodb
    streams = boto3.client(
        "dynamodbstreams",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    table = f"stream-{uuid.uuid4().hex[:8]}"
    arn = db.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )["TableDescription"]["LatestStreamArn"]
    try:
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        before = _live(ShardIterator)
        for _ in range(READS):
            iterator = streams.get_records(ShardIterator=iterator)["NextShardIterator"]
        kept = _live(ShardIterator) - before
        elapsed[0] = ITERATOR_LIFETIME_SEC + 1
        streams.get_records(ShardIterator=iterator)
        left = _live(ShardIterator) - before
    finally:
        db.delete_table(TableName=table)
    assert kept == READS, f"an iterator lives 15 minutes, as in DynamoDB: {kept} of {READS} kept"
    assert left <= 0, (
        f"local memory stays flat under stream reads: {left} more shard iterators alive 15 "
        "minutes after they were handed out (moto keeps every one)"
    )
