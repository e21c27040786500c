"""A `takt worker` keeps a pooled connection to a target host for each of its slots
(`Settings.http_pool_size`, raised to `--concurrency` by `worker_settings`): with fewer, every
call beyond the pool opens a connection of its own and drops it after (over HTTPS, a TLS
handshake each). Judged by a real HTTP server on 127.0.0.1 counting the connections it accepts."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from takt.clock import ManualClock
from takt.config import Settings
from takt.models.calls import CallContext
from takt.models.targets import HttpSpec
from takt.wiring.targets import http_target
from takt_cli.commands.worker import worker_settings
from tests.support.receiver import Receiver, Reply

NOON = datetime(2026, 3, 2, 12, tzinfo=UTC)
# More slots than the default pool's 32, all calling one host at once, twice.
SLOTS = 40
ROUNDS = 2
# Each answer waits this long, so a round's calls all hold their connections at once.
HOLD_SEC = 0.3


class _NoKeys:
    """No tenant signs its calls here."""

    def signing_keys(self, tenant_id: str, now: datetime) -> list[str]:
        return []


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver(Reply(delay_sec=HOLD_SEC)) as r:
        yield r


def _call_at_once(settings: Settings, url: str) -> list[str]:
    target = http_target(settings, ManualClock(NOON), _NoKeys(), None)  # type: ignore[arg-type]
    outcomes: list[str] = []
    for _ in range(ROUNDS):
        start = threading.Barrier(SLOTS)

        def call(slot: int, start: threading.Barrier = start) -> None:
            start.wait()
            context = CallContext(
                job_id="job-1",
                execution_id=f"ex-{slot}",
                attempt=1,
                scheduled_time=NOON,
                payload={},
                timeout_sec=10.0,
                tenant_id="t1",
            )
            outcomes.append(target.call(HttpSpec(url), context).outcome)

        threads = [threading.Thread(target=call, args=(slot,)) for slot in range(SLOTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    return outcomes


def test_a_worker_keeps_a_pooled_connection_to_a_host_for_each_of_its_slots(
    receiver: Receiver,
) -> None:
    deployed = Settings(egress_allow=("127.0.0.0/8",))

    outcomes = _call_at_once(worker_settings(deployed, SLOTS, None), receiver.url)

    assert outcomes == ["success"] * SLOTS * ROUNDS
    assert receiver.connections == SLOTS, (
        f"a worker of {SLOTS} slots calling one host at once reuses a pooled connection per "
        f"slot: {receiver.connections} connections for {ROUNDS} rounds, not {SLOTS}"
    )
