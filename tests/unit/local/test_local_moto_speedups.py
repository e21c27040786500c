"""moto's queries answer the same after the speedups: one partition, in order, paged."""

from __future__ import annotations

import uuid

from takt.aws import make_clients
from takt.config import Settings


def test_a_query_reads_only_its_partition_in_sort_order_across_pages(moto_endpoint: str) -> None:
    db = make_clients(Settings(aws_endpoint_url=moto_endpoint)).dynamodb
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
