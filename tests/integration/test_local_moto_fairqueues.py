"""The local runtime's SQS serves a standard queue's message groups round-robin, as SQS fair
queues do (`takt_cli.local.moto_fairqueues`): one tenant's backlog does not hold back another
tenant's message."""

from __future__ import annotations

import uuid

from takt.aws import AwsClients

BACKLOG = 30


def test_a_tenant_without_a_backlog_is_served_in_the_next_receive(clients: AwsClients) -> None:
    sqs = clients.sqs
    url = sqs.create_queue(QueueName=f"fair-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    try:
        for start in range(0, BACKLOG, 10):
            sqs.send_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "MessageBody": f"flood-{i}", "MessageGroupId": "tenant-a"}
                    for i in range(start, start + 10)
                ],
            )
        sqs.send_message(QueueUrl=url, MessageBody="quiet", MessageGroupId="tenant-b")

        first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    finally:
        sqs.delete_queue(QueueUrl=url)
    bodies = [m["Body"] for m in first]
    assert "quiet" in bodies, (
        f"a fair queue serves a tenant without a backlog in the next receive, not after the "
        f"{BACKLOG} messages another tenant queued first: {bodies}"
    )
    assert bodies[:2] == ["flood-0", "quiet"], f"each group's oldest first, in turn: {bodies}"
