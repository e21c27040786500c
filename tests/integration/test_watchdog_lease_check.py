"""A lease leaves `check_at` (and so the `open` index) alone; the watchdog still recovers it.

The lease and its heartbeats no longer move an execution's `check_at` to the lease's expiry
(docs/CAPACITY.md: two index write units per lease saved). These tests run a real worker whose
target hangs, and show that the watchdog, finding the live lease at the old `check_at`, looks
again at its expiry, returns it to the lane once it expired (beyond the clock margin), and that
the hung worker's late completion is fenced; and that a lease shorter than the resend wait still
moves `check_at`, so recovery is never later than the lease's expiry plus the margin.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from takt.aws import make_clients
from takt.clock import ManualClock
from takt.executions.rules import lease_moves_check_at
from takt.models.ids import to_ms
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobStatus
from takt.wiring import Services
from takt_cli.metering import OUTSIDE, Meter, MotoImages
from tests.support.env import ServicesFactory, SettingsFactory
from tests.support.jobs import TENANT, make_execution, make_job, store_execution
from tests.support.lanes import drain
from tests.support.receiver import Receiver, Reply
from tests.support.threads import in_thread, poll_until

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    opened = threading.Event()
    yield opened
    opened.set()  # never leave a receiver thread blocked


def _metered(
    make_test_settings: SettingsFactory, clock: ManualClock, meter: Meter, **overrides: object
) -> Services:
    settings = make_test_settings(**overrides)
    return Services(settings=settings, clients=make_clients(settings, meter=meter), clock=clock)


def _submit(svc: Services, clock: ManualClock, receiver: Receiver) -> LaneMessage:
    job = make_job(
        now=clock.now(),
        next_run_time=None,
        run_at=NOON,
        target=receiver.url,
        status=JobStatus.COMPLETED,
    )
    svc.jobs.create(job)
    record = store_execution(svc, make_execution(job, NOON, clock.now()), clock.now())
    return Outgoing.of(record).message


def _stored(svc: Services, message: LaneMessage) -> dict[str, object]:
    item = svc.clients.dynamodb.get_item(
        TableName=svc.settings.executions_table,
        Key=svc.executions.key(TENANT, message.execution_id),
        ConsistentRead=True,
    )["Item"]
    return {name: next(iter(value.values())) for name, value in item.items()}


def _get(svc: Services, message: LaneMessage) -> ExecutionRecord:
    return svc.executions.get(TENANT, message.execution_id)


def test_a_lease_and_its_heartbeats_write_no_open_index_entry(
    make_test_settings: SettingsFactory,
    clock: ManualClock,
    receiver: Receiver,
    gate: threading.Event,
) -> None:
    meter = Meter(MotoImages("us-east-1"))
    svc = _metered(make_test_settings, clock, meter, heartbeat_sec=0.2)
    assert not lease_moves_check_at(svc.settings.lease_sec, svc.settings.pending_resend_after_sec)
    receiver.script(Reply(gate=gate))
    message = _submit(svc, clock, receiver)
    check_at = _stored(svc, message)["check_at"]
    before = meter.usage()

    thread, outcomes = in_thread(lambda: svc.runner.process(message))
    receiver.wait_for_calls(1)
    poll_until(lambda: _get(svc, message).heartbeat_seq > 0)
    # The meter counts a call once its answer is back, which may be just after the item shows it.
    poll_until(lambda: (meter.usage() - before).calls[(OUTSIDE, "dynamodb", "UpdateItem")] >= 2)
    during = meter.usage() - before
    gate.set()
    thread.join(timeout=10)

    table = svc.settings.executions_table
    # The lease and at least one heartbeat: one unit each for the item, none for the index.
    assert (
        during.write_units[(OUTSIDE, table, "", "UpdateItem")]
        == during.calls[(OUTSIDE, "dynamodb", "UpdateItem")]
    )
    assert during.write_units[(OUTSIDE, table, "open", "UpdateItem")] == 0
    assert [o.state for o in outcomes] == ["succeeded"]
    assert "check_at" not in _stored(svc, message)
    assert check_at == str(to_ms(NOON + timedelta(seconds=svc.settings.pending_resend_after_sec)))


def test_the_watchdog_looks_again_at_a_live_lease_and_recovers_it_once_expired(
    svc: Services, clock: ManualClock, receiver: Receiver, gate: threading.Event
) -> None:
    margin = timedelta(seconds=svc.settings.clock_margin_sec + 0.5)
    receiver.script(Reply(gate=gate))
    message = _submit(svc, clock, receiver)
    clock.set(NOON + timedelta(seconds=10))  # the worker leases 10 s after the claim
    thread, outcomes = in_thread(lambda: svc.runner.process(message))
    receiver.wait_for_calls(1)
    expires = to_ms(clock.now() + timedelta(seconds=svc.settings.lease_sec))
    first_check = NOON + timedelta(seconds=svc.settings.pending_resend_after_sec)

    # At the old check time the lease is live: left running, looked at again at its expiry.
    clock.set(first_check + margin)
    early = svc.watchdog.sweep(clock.now())
    assert (early.candidates, early.lease_expired) == (1, 0)
    assert _get(svc, message).state == ExecState.RUNNING
    assert _stored(svc, message)["check_at"] == str(expires)
    clock.set(datetime.fromtimestamp(expires / 1000, UTC) + margin - timedelta(seconds=1))
    assert svc.watchdog.sweep(clock.now()).candidates == 0

    # Past the expiry and the margin: back to the lane as the next attempt.
    clock.advance(1)
    late = svc.watchdog.sweep(clock.now())
    assert late.lease_expired == 1
    assert (_get(svc, message).state, _get(svc, message).attempt) == (ExecState.PENDING, 2)
    assert [m.attempt for m in drain(svc)] == [2]

    # The hung worker's answer arrives late: fenced, never applied.
    gate.set()
    thread.join(timeout=10)
    assert [o.state for o in outcomes] == ["fenced"]
    assert _get(svc, message).state == ExecState.PENDING


def test_a_lease_shorter_than_the_resend_wait_moves_check_at_to_its_expiry(
    make_svc: ServicesFactory, clock: ManualClock, receiver: Receiver, gate: threading.Event
) -> None:
    svc = make_svc(lease_sec=10.0, heartbeat_sec=3.0, pending_resend_after_sec=30.0)
    assert lease_moves_check_at(svc.settings.lease_sec, svc.settings.pending_resend_after_sec)
    receiver.script(Reply(gate=gate))
    message = _submit(svc, clock, receiver)
    clock.set(NOON + timedelta(seconds=1))
    thread, _ = in_thread(lambda: svc.runner.process(message))
    receiver.wait_for_calls(1)

    expires = to_ms(clock.now() + timedelta(seconds=10))
    assert _stored(svc, message)["check_at"] == str(expires)
    clock.set(datetime.fromtimestamp(expires / 1000, UTC) + timedelta(seconds=3))
    assert svc.watchdog.sweep(clock.now()).lease_expired == 1
    gate.set()
    thread.join(timeout=10)
