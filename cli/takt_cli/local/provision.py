"""Creates takt's tables and queues from `takt.resources`, as the CDK app does in the cloud."""

from __future__ import annotations

import json

from takt.aws import AwsClients
from takt.config import Settings
from takt.resources import QUEUES, TABLES, TableSpec


def _add_missing_indexes(clients: AwsClients, spec: TableSpec, name: str) -> None:
    """Create the indexes `spec` has and an existing table lacks (a table made by an older
    takt, such as the jobs table before its `unindexed` index), as a CDK update would."""
    described = clients.dynamodb.describe_table(TableName=name)["Table"]
    present = {index["IndexName"] for index in described.get("GlobalSecondaryIndexes", [])}
    wanted = spec.create_table_kwargs(name)
    for index in wanted.get("GlobalSecondaryIndexes", []):
        if index["IndexName"] in present:
            continue
        names = {key["AttributeName"] for key in index["KeySchema"]}
        clients.dynamodb.update_table(
            TableName=name,
            AttributeDefinitions=[
                a for a in wanted["AttributeDefinitions"] if a["AttributeName"] in names
            ],
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )


def provision(
    clients: AwsClients, settings: Settings, prefix: str = "takt", *, streams: bool = False
) -> dict[str, str]:
    """Create every table and lane (with its DLQ); returns the TAKT_* environment naming them.

    With `streams`, every table has a stream, as a global table's replicas do: a region of
    `takt local --regions` replicates its tables from them (takt_cli.local.replication)."""
    env: dict[str, str] = {}
    existing = set(clients.dynamodb.list_tables().get("TableNames", []))
    for spec in TABLES:
        name = getattr(settings, spec.setting)
        if name not in existing:
            kwargs = spec.create_table_kwargs(name)
            if streams:
                kwargs["StreamSpecification"] = {
                    "StreamEnabled": True,
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                }
            clients.dynamodb.create_table(**kwargs)
            if spec.ttl_attribute:
                clients.dynamodb.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
                )
        else:
            _add_missing_indexes(clients, spec, name)
        env[f"TAKT_{spec.setting.upper()}"] = name
    urls: dict[str, str] = {}
    for queue in QUEUES:
        dlq_url = clients.sqs.create_queue(
            QueueName=f"{prefix}-{queue.lane}-dlq",
            Attributes={"MessageRetentionPeriod": str(queue.dlq_retention_sec)},
        )["QueueUrl"]
        dlq_arn = clients.sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        urls[queue.lane] = clients.sqs.create_queue(
            QueueName=f"{prefix}-{queue.lane}",
            Attributes={
                "VisibilityTimeout": str(queue.visibility_timeout_sec),
                "MessageRetentionPeriod": str(queue.retention_sec),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": queue.max_receive_count}
                ),
            },
        )["QueueUrl"]
    env["TAKT_LANE_URLS"] = json.dumps(urls)
    return env
