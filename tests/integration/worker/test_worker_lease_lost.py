"""A worker that lost its lease stops (DESIGN invariant 10).

Heartbeats fail (the executions table refuses or never answers them) while the call goes on. On
the worker's own monotonic clock (here the test's `ManualClock`, which the runner is given as its
monotonic clock) the lease ends `lease_sec - clock_margin_sec` after the last write that renewed
it: from then on the worker has stopped waiting for the call, told it to stop, and writes nothing
at all. The watchdog takes the lease only after its expiry plus the margin on its own clock, so a
last attempt is marked dead only once its worker has stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

import pytest

from takt.clock import ManualClock
from takt.models.records import ExecState, ExecutionRecord, RetryPolicy
from takt.watchdog.sweeper import Watchdog, WatchdogSettings
from takt.wiring import Services
from takt.worker.runner import RunOutcome
from tests.integration.worker import handlers
from tests.integration.worker.conftest import runner_for, stored, submit_to
from tests.support.env import ServicesFactory
from tests.support.faults import HeartbeatOutage, SlowWrite, adds_heartbeat, sets_started_at
from tests.support.lanes import drain
from tests.support.receiver import Receiver, Reply
from tests.support.threads import in_thread, poll_until

ONE_ATTEMPT = RetryPolicy(max_attempts=1, backoff="fixed", initial_interval="30s", jitter="none")
TWO_ATTEMPTS = RetryPolicy(max_attempts=2, backoff="fixed", initial_interval="30s", jitter="none")


@pytest.fixture
def svc(make_svc: ServicesFactory) -> Services:
    # Heartbeats every 50 ms of real time; the lease (30 s) and margin (2 s) on the manual clock.
    return make_svc(heartbeat_sec=0.05)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    opened = threading.Event()
    yield opened
    opened.set()


def _valid_sec(svc: Services) -> float:
    return svc.settings.lease_sec - svc.settings.clock_margin_sec


def _running(svc: Services, record: ExecutionRecord) -> ExecutionRecord:
    poll_until(lambda: stored(svc, record).state == ExecState.RUNNING, "the lease")
    return stored(svc, record)


def _outage(
    svc: Services, mode: Literal["refuse", "hang"] = "refuse", let_through: int = 0
) -> HeartbeatOutage:
    return HeartbeatOutage(
        svc.clients.dynamodb, svc.settings.executions_table, mode=mode, let_through=let_through
    )


def _slow(svc: Services, clock: ManualClock, sec: float, match: Any) -> SlowWrite:
    """The first matching UpdateItem on the executions table takes `sec` on the worker's clock."""
    return SlowWrite(
        svc.clients.dynamodb,
        "UpdateItem",
        svc.settings.executions_table,
        elapse=lambda: clock.advance(sec),
        match=match,
    )


# The rule the three tests below defend, as their failures name it.
COUNTS_FROM_THE_SEND = "the local lease counts from before its write was sent (invariant 10)"


def test_a_lease_write_that_takes_the_whole_lease_calls_nothing_its_lease_counts_from_the_send(
    svc: Services, clock: ManualClock, gate: threading.Event
) -> None:
    with Receiver(Reply(gate=gate)) as receiver:
        record, message = submit_to(svc, clock, receiver.url, retry=TWO_ATTEMPTS)
        with _slow(svc, clock, _valid_sec(svc), sets_started_at) as slow:
            thread, outcomes = in_thread(
                lambda: runner_for(svc, "w-1", clock.monotonic).process(message)
            )
            thread.join(timeout=5)

        assert slow.slowed == 1
        assert [o.state for o in outcomes] == ["lease_lost"], COUNTS_FROM_THE_SEND
        assert receiver.calls == [], COUNTS_FROM_THE_SEND
        assert stored(svc, record).fenced_reports == 0


def test_a_slow_lease_write_leaves_the_worker_only_what_is_left_of_its_lease(
    svc: Services, clock: ManualClock, gate: threading.Event
) -> None:
    valid = _valid_sec(svc)
    with Receiver(Reply(gate=gate)) as receiver:
        record, message = submit_to(svc, clock, receiver.url, retry=TWO_ATTEMPTS)
        with _slow(svc, clock, valid - 0.5, sets_started_at), _outage(svc) as outage:
            thread, outcomes = in_thread(
                lambda: runner_for(svc, "w-1", clock.monotonic).process(message)
            )
            receiver.wait_for_calls(1)
            leased = _running(svc, record)
            poll_until(lambda: outage.failed >= 2, "two refused heartbeats")
            assert outcomes == []

            clock.advance(0.5)  # the lease's whole time since its write was sent
            thread.join(timeout=5)

            assert [o.state for o in outcomes] == ["lease_lost"], COUNTS_FROM_THE_SEND
            assert stored(svc, record) == leased


def test_a_heartbeat_whose_answer_is_slow_renews_the_lease_from_when_it_was_sent(
    svc: Services, clock: ManualClock, gate: threading.Event
) -> None:
    valid = _valid_sec(svc)
    with Receiver(Reply(gate=gate)) as receiver:
        record, message = submit_to(svc, clock, receiver.url, retry=TWO_ATTEMPTS)
        # The first heartbeat's answer takes all but half a second of a lease; the rest fail.
        with _slow(svc, clock, valid - 0.5, adds_heartbeat), _outage(svc, let_through=1) as outage:
            thread, outcomes = in_thread(
                lambda: runner_for(svc, "w-1", clock.monotonic).process(message)
            )
            receiver.wait_for_calls(1)
            poll_until(lambda: outage.failed >= 2, "two refused heartbeats after the slow one")
            renewed = stored(svc, record)
            assert renewed.heartbeat_seq == 1
            assert outcomes == []

            clock.advance(0.5)  # the lease's whole time since the slow heartbeat was sent
            thread.join(timeout=5)

            assert [o.state for o in outcomes] == ["lease_lost"], COUNTS_FROM_THE_SEND
            assert stored(svc, record) == renewed


def test_heartbeats_refused_stop_an_http_call_at_the_lease_expiry_less_the_margin_unreported(
    svc: Services, clock: ManualClock, gate: threading.Event
) -> None:
    with Receiver(Reply(gate=gate)) as receiver:
        record, message = submit_to(svc, clock, receiver.url, retry=TWO_ATTEMPTS)
        with _outage(svc) as outage:
            thread, outcomes = in_thread(
                lambda: runner_for(svc, "w-1", clock.monotonic).process(message)
            )
            receiver.wait_for_calls(1)
            leased = _running(svc, record)
            poll_until(lambda: outage.failed >= 2, "two refused heartbeats")

            clock.advance(_valid_sec(svc) - 0.5)
            seen = outage.failed
            # Two more refused beats after the advance: the worker looked and its lease holds.
            poll_until(lambda: outage.failed >= seen + 2, "heartbeats after the advance")
            assert outcomes == []

            clock.advance(0.5)
            thread.join(timeout=10)

            assert [(o.state, o.detail) for o in outcomes] == [
                ("lease_lost", "lease expired before a heartbeat succeeded")
            ]
            gate.set()  # the target answers now: nobody is listening
            assert stored(svc, record) == leased  # nothing written, not even a fenced count
            assert drain(svc) == []
            assert len(receiver.calls) == 1


def test_a_heartbeat_that_never_answers_does_not_keep_the_worker_past_its_lease(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.wait", {"key": key}, retry=TWO_ATTEMPTS)
    with _outage(svc, "hang") as outage:
        thread, outcomes = in_thread(
            lambda: runner_for(svc, "w-1", clock.monotonic).process(message)
        )
        leased = _running(svc, record)
        poll_until(lambda: outage.failed >= 1, "a heartbeat hanging")

        clock.advance(_valid_sec(svc))
        thread.join(timeout=10)

        assert [o.state for o in outcomes] == ["lease_lost"]
        poll_until(lambda: bool(handlers.calls(key)), "the handler's stop")
        assert [c.stop_reason for c in handlers.calls(key)] == ["lease_lost"]
        assert stored(svc, record) == leased


def test_a_heartbeat_that_succeeds_renews_the_lease_on_the_workers_clock(
    svc: Services, clock: ManualClock, key: str
) -> None:
    record, message = submit_to(svc, clock, "handler:it.wait", {"key": key})
    thread, outcomes = in_thread(lambda: runner_for(svc, "w-1", clock.monotonic).process(message))
    _running(svc, record)

    # Three times most of a lease passes, each followed by a heartbeat that succeeds.
    for _ in range(3):
        renewed_after = stored(svc, record).heartbeat_seq + 1
        clock.advance(_valid_sec(svc) - 1)
        poll_until(lambda: stored(svc, record).heartbeat_seq > renewed_after, "renewals")  # noqa: B023
    handlers.gate(key).set()
    thread.join(timeout=10)

    assert [o.state for o in outcomes] == ["succeeded"]
    assert stored(svc, record).state == ExecState.SUCCEEDED


def test_a_slow_last_attempt_is_marked_dead_only_after_its_worker_stopped(
    svc: Services, clock: ManualClock, gate: threading.Event
) -> None:
    watchdog = Watchdog(
        WatchdogSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, svc.lanes
    )
    margin = svc.settings.clock_margin_sec
    with Receiver(Reply(gate=gate)) as receiver:
        record, message = submit_to(svc, clock, receiver.url, retry=ONE_ATTEMPT)
        with _outage(svc) as outage:
            thread, outcomes = in_thread(
                lambda: runner_for(svc, "w-1", clock.monotonic).process(message)
            )
            receiver.wait_for_calls(1)
            leased = _running(svc, record)
            assert leased.lease_expires_at is not None
            expires = leased.lease_expires_at
            poll_until(lambda: outage.failed >= 1, "a refused heartbeat")

            # While the lease is live on the worker's clock, no sweep ends the execution.
            for at in (expires - 1000 * (margin + 0.5), expires, expires + 1000 * (margin - 0.5)):
                clock.set(_instant(at))
                watchdog.sweep(clock.now())
                assert stored(svc, record).state == ExecState.RUNNING
            thread.join(timeout=10)
            stopped: list[RunOutcome] = list(outcomes)

            clock.set(_instant(expires + 1000 * (margin + 0.5)))
            watchdog.sweep(clock.now())
            gate.set()  # the first call answers after the execution ended: it changes nothing

        assert [o.state for o in stopped] == ["lease_lost"]
        dead = stored(svc, record)
        assert dead.state == ExecState.DEAD
        assert [(a.attempt, a.outcome) for a in dead.attempts] == [(1, "lease_expired")]
        assert dead.fenced_reports == 0
        assert len(receiver.calls) == 1


def _instant(at_ms: float) -> datetime:
    """The wall instant `at_ms` epoch milliseconds."""
    return datetime.fromtimestamp(at_ms / 1000, UTC)
