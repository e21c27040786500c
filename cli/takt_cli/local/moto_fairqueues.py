"""SQS fair queues in moto's server, for the local runtime and the tests only.

takt sends every message with its tenant as `MessageGroupId` (`takt.dispatch.lanes`): on a
standard queue that makes SQS a fair queue, which serves a tenant without a backlog ahead of a
tenant with one, so one tenant's flood does not delay the others' messages. moto ignores the group
of a standard queue's message and serves the queue oldest first: locally, another tenant's
2-second job waited behind every task of one tenant's 2,000-task fan-out (up to 132 s). Here a
receive from a standard queue takes the visible messages one group at a time, round-robin, each
group's oldest first: a tenant with one message waiting is served in the next receive, whatever
another tenant queued before it. A FIFO queue keeps moto's own order. Nothing here is shipped in
the Lambda layer.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Any


def round_robin(messages: list[Any]) -> list[Any]:
    """`messages` (oldest first) taken one per group in turn, each group's oldest first; the
    groups in the order of their oldest message."""
    groups: dict[Any, list[Any]] = {}
    for message in messages:
        groups.setdefault(message.group_id, []).append(message)
    if len(groups) <= 1:
        return messages
    return [m for turn in zip_longest(*groups.values()) for m in turn if m is not None]


def apply() -> None:
    """Serve moto's standard queues by message group, round-robin (idempotent)."""
    from moto.sqs.models import Queue  # noqa: PLC0415 - moto's internals load only with the local runtime

    current: Any = Queue.messages  # the property object, read from the class
    if getattr(current.fget, "_takt", False):
        return

    def messages(self: Any) -> list[Any]:
        visible = [m for m in self._messages if m.visible and not m.delayed]
        return visible if self.fifo_queue else round_robin(visible)

    messages._takt = True  # type: ignore[attr-defined]
    Queue.messages = property(messages)  # type: ignore[method-assign, assignment]
