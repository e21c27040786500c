"""takt's SQS priority lanes with their dead-letter queues, built from `takt.resources.QUEUES`."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Tags
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from takt.resources import QUEUES


@dataclass(frozen=True)
class Lane:
    """A lane's queue and the dead-letter queue its poison messages end in."""

    queue: sqs.Queue
    dlq: sqs.Queue


class Lanes(Construct):
    """One standard queue per lane, named by CloudFormation, never by us.

    Encryption is SSE-SQS: free, and no KMS key policy to keep in step with the functions' roles
    in the other stack. `enforce_ssl` denies plain-HTTP access in the queue policy. The dead-letter
    queue keeps its messages longer than the lane (the spec says how long) so a message that moved
    there near the end of its life is not lost before someone looks.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.lanes: dict[str, Lane] = {}
        for spec in QUEUES:
            name = spec.lane.capitalize()
            dlq = sqs.Queue(
                self,
                f"{name}Dlq",
                retention_period=Duration.seconds(spec.dlq_retention_sec),
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
            )
            queue = sqs.Queue(
                self,
                name,
                visibility_timeout=Duration.seconds(spec.visibility_timeout_sec),
                retention_period=Duration.seconds(spec.retention_sec),
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
                dead_letter_queue=sqs.DeadLetterQueue(
                    queue=dlq, max_receive_count=spec.max_receive_count
                ),
            )
            for key, value in {"takt:lane": spec.lane, **spec.tags}.items():
                Tags.of(queue).add(key, value)
                Tags.of(dlq).add(key, value)
            self.lanes[spec.lane] = Lane(queue=queue, dlq=dlq)
