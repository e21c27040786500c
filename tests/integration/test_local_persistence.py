"""The data folder of `takt local` (takt_cli.local.persistence) on a journaled moto server: the
tables come back as they were written, through a snapshot and a journal, and a journal line cut
short by a kill is skipped."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from takt_cli.local.persistence import DataDirInUseError, DataStore
from takt_cli.local.runtime import _moto_server, free_port

TTL = {"things_table": "expires_at"}


class Server:
    """A journaled moto server on `data`, with the table created, and a client to it.

    moto's state is one per process, shared by every server in it: a "new process" here drops
    the table the earlier server left and creates it empty, as a fresh moto would have it.
    """

    def __init__(self, data: Path) -> None:
        table = f"things-{data.parent.name}"
        self.store = DataStore(data)
        port = free_port()
        self.moto = _moto_server("127.0.0.1", port, self.store.wrap)
        self.moto.start()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.db = boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        # Not `list_tables`: it pages at 100 names, and the other tests of this process may
        # have made more than that.
        with contextlib.suppress(self.db.exceptions.ResourceNotFoundException):
            self.db.delete_table(TableName=table)
        self.db.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.table = table
        self.loaded = self.store.open(self.endpoint, "us-east-1", {"things_table": table}, TTL)

    def items(self) -> dict[str, dict[str, Any]]:
        return {i["pk"]["S"]: i for i in self.db.scan(TableName=self.table)["Items"]}

    def crash(self) -> None:
        """Drop the server without the clean stop's snapshot, as a kill would."""
        self.moto.stop()
        self.store.close()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.moto.stop()


def test_writes_come_back_from_the_journal_and_a_torn_last_line_is_skipped(
    tmp_path: Path, servers: list[Server]
) -> None:
    first = Server(tmp_path / "data")
    servers.append(first)
    item: dict[str, Any] = {"pk": {"S": "a"}, "n": {"N": "1"}, "b": {"B": b"\0"}}
    first.db.put_item(TableName=first.table, Item=item)
    first.db.update_item(
        TableName=first.table,
        Key={"pk": {"S": "a"}},
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    first.db.put_item(TableName=first.table, Item={"pk": {"S": "gone"}})
    first.db.delete_item(TableName=first.table, Key={"pk": {"S": "gone"}})
    expected = first.items()
    first.crash()
    with (tmp_path / "data" / "journal-1.log").open("a") as journal:
        journal.write('{"op":"PutItem","region":"us-east-1","body":{"TableName":"th')

    second = Server(tmp_path / "data")
    servers.append(second)

    assert second.items() == expected
    assert expected["a"]["n"] == {"N": "2"}
    assert second.loaded == 1


def test_a_failed_conditional_write_is_not_replayed(tmp_path: Path, servers: list[Server]) -> None:
    first = Server(tmp_path / "data")
    servers.append(first)
    first.db.put_item(TableName=first.table, Item={"pk": {"S": "a"}, "v": {"N": "1"}})
    with pytest.raises(first.db.exceptions.ConditionalCheckFailedException):
        first.db.put_item(
            TableName=first.table,
            Item={"pk": {"S": "a"}, "v": {"N": "2"}},
            ConditionExpression="attribute_not_exists(pk)",
        )
    first.crash()

    second = Server(tmp_path / "data")
    servers.append(second)

    assert second.items()["a"]["v"] == {"N": "1"}


def test_items_past_their_ttl_are_dropped_at_load(tmp_path: Path, servers: list[Server]) -> None:
    first = Server(tmp_path / "data")
    servers.append(first)
    now = int(time.time())
    for pk, expires in (("old", now - 10), ("live", now + 3600)):
        first.db.put_item(
            TableName=first.table, Item={"pk": {"S": pk}, "expires_at": {"N": str(expires)}}
        )
    first.store.compact()
    first.crash()

    second = Server(tmp_path / "data")
    servers.append(second)

    assert sorted(second.items()) == ["live"]


def test_a_folder_in_use_is_refused(tmp_path: Path, servers: list[Server]) -> None:
    servers.append(Server(tmp_path / "data"))

    with pytest.raises(DataDirInUseError, match="in use by another takt local"):
        DataStore(tmp_path / "data")
