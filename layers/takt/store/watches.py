"""Watch lists: the executions a claim created outside the watchdog's `open` index.

An execution a claim creates and sends is not put in the sparse `open` index (that entry and its
removal at the end were two of its write units, docs/CAPACITY.md). Instead the claim writes, before
it creates any of them, one watch item per check second listing the executions it is about to
create: a write per claim, not per execution. When the check time comes (when the `open` index
would have had the watchdog look), the watchdog reads the listed executions, eventually
consistently, and puts every one that has not ended into the `open` index; from there it is
handled as any other open execution (a pending one whose message was lost is sent again, a running
one is looked at again when its lease expires). Then it deletes the watch item. An execution that
ended in time (nearly all) never touches the index.

Watch items live in the due table, in partitions of their own (`watch#<n>`: a claim of due shard
`s` writes to `s mod watch_partitions(due shards)`, one partition for every DUE_SHARDS_PER_WATCH
due shards), sorted by check time: `<check epoch ms>#<unique>`. Fewer partitions than due shards
keep the watchdog's idle queries few (each sweep reads every partition once); eight due shards'
lists fit one partition's writes even at the top of the hour (a million executions' lists are
about 100,000 write units, written over the half minute the burst is claimed in). They are
written before the executions and deleted only once checked, so a crash of the claim or of the
watchdog at any point leaves the item to a later check (a claim redone after a crash writes
another one, which is harmless).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from takt.models.ids import from_ms, to_ms
from takt.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PREFIX = "watch#"
# Due shards whose claims share one watch partition.
DUE_SHARDS_PER_WATCH = 8
# Executions per watch item: about 100 bytes each, so an item stays far below DynamoDB's 400 KB.
CHUNK = 500
# Watch items one check reads per partition: a sweep's work stays bounded, the rest waits for
# the next sweep.
READ_LIMIT = 50


@dataclass(frozen=True)
class ExecutionRef:
    tenant_id: str
    execution_id: str


@dataclass(frozen=True)
class Watched:
    """What a watch list's check found of its executions: those that have not ended and are
    outside the `open` index, and those not written at all (an occurrence whose claim left its
    record to the worker's lease, `Settings.record_at_lease`, and no worker leased yet)."""

    unended: list[ExecutionRef]
    unwritten: list[ExecutionRef]


@dataclass(frozen=True)
class Watch:
    """One watch item: its key, when to check, and the executions it lists."""

    bucket: str
    watch_key: str
    check_at: datetime
    executions: tuple[ExecutionRef, ...]


def watch_partitions(due_shards: int) -> int:
    """How many watch partitions a deployment of `due_shards` due shards has."""
    return max(1, -(-due_shards // DUE_SHARDS_PER_WATCH))


class WatchStore:
    def __init__(self, client: DynamoDBClient, table: str, due_shards: int) -> None:
        self._db = client
        self._table = table
        self.shards = watch_partitions(due_shards)

    def add(self, due_shard: int, check_at_ms: int, executions: Sequence[ExecutionRef]) -> None:
        """List `executions`, claimed from `due_shard`, for a check at `check_at_ms` (in as many
        items as they need)."""
        shard = due_shard % self.shards
        for start in range(0, len(executions), CHUNK):
            chunk = executions[start : start + CHUNK]
            self._db.put_item(
                TableName=self._table,
                Item={
                    "bucket": {"S": f"{PREFIX}{shard:03d}"},
                    "due_key": {"S": f"{check_at_ms:013d}#{uuid.uuid4().hex}"},
                    "executions": {"L": [{"S": f"{e.tenant_id}#{e.execution_id}"} for e in chunk]},
                },
            )

    def due(self, shard: int, until: datetime) -> list[Watch]:
        """Up to READ_LIMIT watch items of partition `shard` whose check time is at or before
        `until`, oldest first. An item that does not read as one is logged and deleted: only
        the claimer writes them, and nothing could check what it lists."""
        resp = self._db.query(
            TableName=self._table,
            KeyConditionExpression="#b = :b AND due_key <= :u",
            ExpressionAttributeNames={"#b": "bucket"},
            ExpressionAttributeValues={
                ":b": {"S": f"{PREFIX}{shard:03d}"},
                # '~' sorts after every '#<unique>' suffix of the same millisecond.
                ":u": {"S": f"{to_ms(until):013d}~"},
            },
            Limit=READ_LIMIT,
        )
        watches = []
        for item in resp.get("Items", []):
            try:
                watches.append(_watch_of(item))
            except (KeyError, ValueError, TypeError, AttributeError):
                logger.exception("watch item cannot be read", item=str(item)[:200])
                self._delete(item["bucket"]["S"], item["due_key"]["S"])
        return watches

    def done(self, watch: Watch) -> None:
        """Delete a checked watch item."""
        self._delete(watch.bucket, watch.watch_key)

    def _delete(self, bucket: str, key: str) -> None:
        self._db.delete_item(
            TableName=self._table, Key={"bucket": {"S": bucket}, "due_key": {"S": key}}
        )


def _watch_of(item: dict[str, Any]) -> Watch:
    key = item["due_key"]["S"]
    refs = []
    for entry in item["executions"]["L"]:
        tenant_id, execution_id = entry["S"].split("#", 1)
        refs.append(ExecutionRef(tenant_id, execution_id))
    return Watch(
        bucket=item["bucket"]["S"],
        watch_key=key,
        check_at=from_ms(int(key.split("#", 1)[0])),
        executions=tuple(refs),
    )
