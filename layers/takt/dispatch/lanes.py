"""Sending executions to their SQS priority lane, in batches of ten."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from takt.models.lanes import Outgoing

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from takt.config import Settings

MAX_DELAY_SEC = 900
# The message attribute naming the region epoch a multi-region claim sent it at.
REGION_EPOCH = "region_epoch"


class SendError(Exception):
    """Some messages could not be sent; their executions stay pending for a later try."""


Route = Callable[[Sequence[Outgoing]], list[Outgoing]]


class LaneSender:
    """Sends to the lanes; `route` (fair dispatch, docs/FAIRNESS.md) may move messages to another
    lane first, decided at send time so the claimer and the runner stay unaware of it."""

    def __init__(self, client: SQSClient, settings: Settings, route: Route | None = None) -> None:
        self._sqs = client
        self._settings = settings
        self._route = route

    def send(self, outgoing: list[Outgoing]) -> int:
        """Send every message; raises SendError if any is still refused after one retry."""
        routed = self._route(outgoing) if self._route is not None else outgoing
        by_lane: dict[str, list[Outgoing]] = {}
        for item in routed:
            by_lane.setdefault(item.lane, []).append(item)
        sent = 0
        for lane, items in by_lane.items():
            url = self._settings.lane_url(lane)
            for start in range(0, len(items), 10):
                sent += self._send_batch(url, items[start : start + 10])
        return sent

    def _send_batch(self, url: str, batch: list[Outgoing]) -> int:
        entries: list[Any] = [_entry(i, item) for i, item in enumerate(batch)]
        for _ in range(2):
            resp = self._sqs.send_message_batch(QueueUrl=url, Entries=entries)
            failed = {f["Id"] for f in resp.get("Failed", [])}
            if not failed:
                return len(batch)
            entries = [e for e in entries if e["Id"] in failed]
        raise SendError(f"{len(entries)} messages refused by {url}")


def _entry(index: int, item: Outgoing) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "Id": str(index),
        "MessageBody": item.message.model_dump_json(),
        "DelaySeconds": max(0, min(MAX_DELAY_SEC, item.delay_sec)),
        # SQS fair queues: a tenant's backlog does not delay other tenants' messages.
        "MessageGroupId": item.message.tenant_id,
    }
    if item.region_epoch is not None:
        entry["MessageAttributes"] = {
            REGION_EPOCH: {"DataType": "Number", "StringValue": str(item.region_epoch)}
        }
    return entry
