"""moto's queries answer the same after the speedups: one partition, in order, paged; and its
conditional writes of one item run one at a time, as DynamoDB's do."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from takt.aws import make_clients
from takt.config import Settings


def test_a_query_reads_only_its_partition_in_sort_order_across_pages(moto_endpoint: str) -> None:
    db = make_clients(Settings(aws_endpoint_url=moto_endpoint)).dynamodb
    table = _table(db)
    for i in (5, 1, 9, 3, 7):
        for pk in ("a", "b"):
            db.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": str(i)}})
    seen: list[str] = []
    kwargs: dict[str, object] = {
        "TableName": table,
        "KeyConditionExpression": "pk = :p AND sk <= :s",
        "ExpressionAttributeValues": {":p": {"S": "a"}, ":s": {"S": "7"}},
        "Limit": 2,
    }
    while True:
        resp = db.query(**kwargs)  # type: ignore[arg-type]
        seen += [item["sk"]["S"] for item in resp["Items"]]
        assert all(item["pk"]["S"] == "a" for item in resp["Items"])
        if "LastEvaluatedKey" not in resp:
            break
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
    assert seen == ["1", "3", "5", "7"]
    empty = db.query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "none"}},
    )
    assert empty["Items"] == []


Keeps = Callable[[str], bool]
KEYS = ["10#a#1", "10#a#2", "10#a#3", "10#b#1", "11#a#1", "12#c#1", "12#c#2", "13#b#1"]
CONDITIONS: dict[str, tuple[str, str | None, Keeps]] = {
    "sk <= :x": ("12#c#1", None, lambda k: k <= "12#c#1"),
    "sk < :x": ("12#c#1", None, lambda k: k < "12#c#1"),
    "sk >= :x": ("10#b", None, lambda k: k >= "10#b"),
    "sk > :x": ("10#a#3", None, lambda k: k > "10#a#3"),
    "sk BETWEEN :x AND :y": ("10#a$", "12#c#1", lambda k: "10#a$" <= k <= "12#c#1"),
    "begins_with(sk, :x)": ("12#", None, lambda k: k.startswith("12#")),
    "sk = :x": ("11#a#1", None, lambda k: k == "11#a#1"),
}


@pytest.mark.parametrize("condition", sorted(CONDITIONS))
@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("limit", [None, 1, 3])
def test_a_range_query_pages_through_exactly_what_its_condition_keeps_in_either_direction(
    moto_endpoint: str, condition: str, forward: bool, limit: int | None
) -> None:
    db = make_clients(Settings(aws_endpoint_url=moto_endpoint)).dynamodb
    table = _table(db)
    for key in KEYS:
        for pk in ("a", "b"):
            db.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": key}})
    low, high, keeps = CONDITIONS[condition]
    values = {":p": {"S": "a"}, ":x": {"S": low}}
    if high is not None:
        values[":y"] = {"S": high}
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": f"pk = :p AND {condition}",
        "ExpressionAttributeValues": values,
        "ScanIndexForward": forward,
        **({"Limit": limit} if limit else {}),
    }
    pages: list[list[str]] = []
    while True:
        resp = db.query(**kwargs)
        pages.append([item["sk"]["S"] for item in resp["Items"]])
        if "LastEvaluatedKey" not in resp:
            break
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        assert len(pages) <= len(KEYS) + 1

    expected = sorted((k for k in KEYS if keeps(k)), reverse=not forward)
    assert [key for page in pages for key in page] == expected
    assert all(len(page) == (limit or len(expected)) for page in pages[:-1])


def _table(db: Any) -> str:
    table = f"speedups-{uuid.uuid4().hex[:8]}"
    db.create_table(
        TableName=table,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return table


RACERS = 5


def test_racing_conditional_writes_of_one_item_let_exactly_one_pass(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB serializes the writes of an item, so of racing updates conditional on the value
    they read, one passes. moto checks a condition and then writes with nothing between the two;
    here each check's verdict is held 50 ms before moto writes, so that every racer passes its
    check before any writes, unless the writes run one at a time."""
    from moto.dynamodb import models  # noqa: PLC0415 - moto's internals, for this test only

    db = make_clients(Settings(aws_endpoint_url=moto_endpoint)).dynamodb
    table = _table(db)
    key = {"pk": {"S": "a"}, "sk": {"S": "0"}}
    db.put_item(TableName=table, Item={**key, "n": {"N": "0"}})
    parse = models.create_condition_expression_parser  # type: ignore[attr-defined]

    class Held:
        """A condition whose verdict is held 50 ms before moto acts on it."""

        def __init__(self, condition: Any) -> None:
            self.condition = condition

        def parse(self) -> Held:
            return self

        def expr(self, item: Any) -> bool:
            verdict = bool(self.condition.parse().expr(item))
            time.sleep(0.05)
            return verdict

    def held(*args: Any) -> Held:
        return Held(parse(*args))

    monkeypatch.setattr(models, "create_condition_expression_parser", held)
    start = threading.Barrier(RACERS)

    def bump(i: int) -> bool:
        start.wait()
        try:
            db.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="SET n = :next, winner = :i",
                ConditionExpression="n = :read",
                ExpressionAttributeValues={
                    ":read": {"N": "0"},
                    ":next": {"N": "1"},
                    ":i": {"N": str(i)},
                },
            )
        except db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    with ThreadPoolExecutor(RACERS) as pool:
        passed = list(pool.map(bump, range(RACERS)))
    stored = db.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]

    assert passed.count(True) == 1, f"racing conditional writes both passed: {passed}"
    assert stored["winner"]["N"] == str(passed.index(True))
