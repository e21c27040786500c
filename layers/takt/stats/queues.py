"""How many messages wait in each lane and its dead-letter queue (SQS GetQueueAttributes).

The dead-letter queue is found from the lane's redrive policy rather than from a setting: the
policy is what SQS actually uses, and a DLQ is always in the lane's account and region, so its
URL is the lane's with the last path segment replaced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

_DEPTH: list[QueueAttributeNameType] = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


@dataclass(frozen=True)
class LaneDepth:
    """SQS's approximate counts for one lane: waiting, being worked on, delayed, dead-lettered."""

    lane: str
    waiting: int
    in_flight: int
    delayed: int
    dead_letter: int


def lane_depths(sqs: SQSClient, lane_urls: dict[str, str]) -> list[LaneDepth]:
    """One `LaneDepth` per lane, in `lane_urls` order."""
    depths = []
    for lane, url in lane_urls.items():
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[*_DEPTH, "RedrivePolicy"])[
            "Attributes"
        ]
        dead_letter = 0
        target = json.loads(attrs.get("RedrivePolicy") or "{}").get("deadLetterTargetArn")
        if target:
            dlq_url = url.rstrip("/").rsplit("/", 1)[0] + "/" + str(target).rsplit(":", 1)[-1]
            dlq = sqs.get_queue_attributes(
                QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]
            dead_letter = int(dlq.get("ApproximateNumberOfMessages", 0))
        depths.append(
            LaneDepth(
                lane=lane,
                waiting=int(attrs.get("ApproximateNumberOfMessages", 0)),
                in_flight=int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0)),
                delayed=int(attrs.get("ApproximateNumberOfMessagesDelayed", 0)),
                dead_letter=dead_letter,
            )
        )
    return depths
