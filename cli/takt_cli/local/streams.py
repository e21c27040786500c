"""Reading a DynamoDB table's stream as Lambda's event source mapping does, for `takt local` and
the tests: every shard from its oldest record, in order, each record once per reader.

In the cloud the `indexer` function gets these records from Lambda; here a thread of the local
runtime (and, in the tests, `tests/support/indexer.py`) reads them from moto's stream with this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MAX_RECORDS = 1000


class StreamReader:
    """The records of one table's stream that this reader has not returned yet."""

    def __init__(self, dynamodb: DynamoDBClient, streams: Any, table: str) -> None:
        """`streams` is a `dynamodbstreams` client (typed Any: the project carries no stubs
        for it, and only this class calls it)."""
        self._streams = streams
        arn = dynamodb.describe_table(TableName=table)["Table"].get("LatestStreamArn")
        if not arn:
            raise RuntimeError(f"table {table} has no stream")
        self.arn = arn
        # Shard id -> the iterator to read next (None once a closed shard is read to its end).
        self._iterators: dict[str, str | None] = {}

    def read(self, limit: int = MAX_RECORDS) -> list[dict[str, Any]]:
        """The next records, oldest first within each shard (at most `limit` per shard)."""
        if not self._iterators or None in self._iterators.values():
            self._discover()
        records: list[dict[str, Any]] = []
        for shard, iterator in self._iterators.items():
            if iterator is None:
                continue
            resp = self._streams.get_records(ShardIterator=iterator, Limit=limit)
            records.extend(dict(r) for r in resp.get("Records", []))
            self._iterators[shard] = resp.get("NextShardIterator")
        return records

    def _discover(self) -> None:
        """Start every shard not seen yet at its oldest record (TRIM_HORIZON): at the start, and
        when a shard has closed (DynamoDB then opens its child shards)."""
        description = self._streams.describe_stream(StreamArn=self.arn)["StreamDescription"]
        for shard in description.get("Shards", []):
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._iterators[shard_id] = self._streams.get_shard_iterator(
                    StreamArn=self.arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
