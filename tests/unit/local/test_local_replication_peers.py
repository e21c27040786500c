"""The replicator's timing and a peer's failure (`takt_cli.local.replication.Replicator`), on a
fake clock and a fake peer: a write arrives `delay_ms` after it was made; a peer whose process is
gone (connections refused) loses what it had not replicated, as a failed region does; a peer that
only answers slowly (a paused process) keeps it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from takt_cli.local.replication import Change, MotoReplica, Replicator

WRITTEN = 1_000.0
DELAY_MS = 300


class FakeReplica:
    def __init__(self) -> None:
        self.applied: list[Change] = []

    def apply(self, backend: Any, change: Change) -> bool:
        self.applied.append(change)
        return True


class Clock:
    def __init__(self) -> None:
        self.now = WRITTEN

    def __call__(self) -> float:
        return self.now


def _record() -> dict[str, Any]:
    return {
        "eventName": "INSERT",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": datetime.fromtimestamp(WRITTEN, UTC),
            "Keys": {"pk": {"S": "a"}},
            "NewImage": {"pk": {"S": "a"}},
        },
    }


def _replicator(answers: list[Any]) -> tuple[Replicator, FakeReplica, Clock]:
    """A replicator of one peer whose reads answer `answers` in turn (a list of records, or an
    exception to raise)."""
    replica, clock = FakeReplica(), Clock()
    replicator = Replicator(
        cast(MotoReplica, replica),
        None,
        {"us-east-1": "http://127.0.0.1:9"},
        ["t"],
        DELAY_MS,
        clock,
    )

    def read() -> list[tuple[str, dict[str, Any]]]:
        answer = answers.pop(0) if answers else []
        if isinstance(answer, Exception):
            raise answer
        return [("t", record) for record in answer]

    replicator._peers[0].read = read  # type: ignore[method-assign]
    return replicator, replica, clock


def test_a_peer_s_write_is_applied_once_the_replication_delay_has_passed() -> None:
    replicator, replica, clock = _replicator([[_record()]])
    clock.now = WRITTEN + 0.29
    replicator.step()
    assert replica.applied == [], "replication delay: nothing arrives before delay_ms"
    clock.now = WRITTEN + 0.3
    replicator.step()
    assert [c.stamp for c in replica.applied] == [(1_000_000, "us-east-1")], (
        "replication delay: the write arrives delay_ms after it was made, with its stamp"
    )


def test_a_peer_that_refuses_connections_loses_what_it_had_not_replicated() -> None:
    gone = EndpointConnectionError(endpoint_url="http://127.0.0.1:9")
    replicator, replica, clock = _replicator([[_record()], gone])
    clock.now = WRITTEN + 0.1
    replicator.step()
    clock.now = WRITTEN + 1
    replicator.step()
    assert replica.applied == [], (
        "a killed region's writes of its last delay never reach the others (its outage's RPO)"
    )


def test_a_peer_that_only_answers_slowly_keeps_what_it_wrote() -> None:
    slow = ReadTimeoutError(endpoint_url="http://127.0.0.1:9")
    replicator, replica, clock = _replicator([[_record()], slow])
    clock.now = WRITTEN + 0.1
    replicator.step()
    clock.now = WRITTEN + 1
    replicator.step()
    assert len(replica.applied) == 1, "a paused region's writes arrive once it answers again"
