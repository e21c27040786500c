"""The priority lanes in memory: `takt.models.lanes.Lanes`."""

from __future__ import annotations

from takt.models.lanes import Outgoing


class FakeLanes:
    """Every message sent, in order; a lost message is one a test drops from `sent`."""

    def __init__(self) -> None:
        self.sent: list[Outgoing] = []

    def send(self, outgoing: list[Outgoing]) -> int:
        self.sent.extend(outgoing)
        return len(outgoing)

    def attempts(self) -> list[tuple[str, int]]:
        """(execution id, attempt) of every message sent, in order."""
        return [(o.message.execution_id, o.message.attempt) for o in self.sent]
