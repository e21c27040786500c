"""Reading the SQS lanes in tests: drain what is visible, count what is delayed."""

from __future__ import annotations

from takt.dispatch.lanes import LaneSender
from takt.models.lanes import LaneMessage, Outgoing
from takt.wiring import Services


def drain(svc: Services, lane: str = "default") -> list[LaneMessage]:
    """Every message visible now in `lane` (received, so later drains see only new ones)."""
    url = svc.settings.lane_url(lane)
    out: list[LaneMessage] = []
    while True:
        resp = svc.clients.sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        )
        messages = resp.get("Messages", [])
        if not messages:
            return out
        out.extend(LaneMessage.model_validate_json(m["Body"]) for m in messages)
        svc.clients.sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )


def delayed_count(svc: Services, lane: str = "default") -> int:
    """Messages sent with a delay that has not passed yet (invisible to `drain`)."""
    attrs = svc.clients.sqs.get_queue_attributes(
        QueueUrl=svc.settings.lane_url(lane),
        AttributeNames=["ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessagesDelayed"])


class RecordingLanes(LaneSender):
    """A real sender that also remembers what it sent (with each message's delay)."""

    def __init__(self, svc: Services) -> None:
        super().__init__(svc.clients.sqs, svc.settings)
        self.sent: list[Outgoing] = []

    def send(self, outgoing: list[Outgoing]) -> int:
        count = super().send(outgoing)
        self.sent.extend(outgoing)
        return count


def visible_count(svc: Services, lane: str = "default") -> int:
    """Messages ready to be received in `lane`, counted without receiving them."""
    attrs = svc.clients.sqs.get_queue_attributes(
        QueueUrl=svc.settings.lane_url(lane),
        AttributeNames=["ApproximateNumberOfMessages"],
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"])
