"""A tenant's cap on running executions, on the real runner against a loopback HTTP target:
never more calls in flight than the cap, the rest wait pending with no attempt used, every end
frees the slot, and the watchdog frees the slot of a lease that expired."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from takt.clock import ManualClock
from takt.config import TenantLimits
from takt.models.lanes import LaneMessage, Outgoing
from takt.models.records import ExecState
from takt.store.running_slots import RunningSlots
from takt.wiring import Services
from takt.worker.runner import RunOutcome
from tests.integration.worker.conftest import submit_to
from tests.support.env import ServicesFactory
from tests.support.jobs import TENANT
from tests.support.receiver import Receiver, Reply

CAP = 2


def _capped(make_svc: ServicesFactory) -> Services:
    return make_svc(tenant_limit_overrides={TENANT: TenantLimits(max_running=CAP)}, lease_sec=30.0)


def _holders(svc: Services) -> set[str]:
    return RunningSlots(svc.clients.dynamodb, svc.settings.tenants_table).holders(TENANT)


def _wait_until(check: Callable[[], bool]) -> None:
    idle = threading.Event()  # never set: its timed wait is the poll interval
    for _ in range(1000):
        if check():
            return
        idle.wait(0.02)
    raise AssertionError("not seen within 20 s")


def _wait_for_calls(receiver: Receiver, count: int) -> None:
    _wait_until(lambda: len(receiver.calls) >= count)


def test_over_the_cap_executions_wait_pending_and_no_more_than_the_cap_run_at_once(
    make_svc: ServicesFactory, clock: ManualClock, receiver: Receiver
) -> None:
    svc = _capped(make_svc)
    gate = threading.Event()
    receiver.script(Reply(gate=gate), times=CAP)
    submitted = [submit_to(svc, clock, receiver.url) for _ in range(6)]
    messages = [message for _, message in submitted]

    with ThreadPoolExecutor(len(messages)) as pool:
        futures = [pool.submit(svc.runner.process, m) for m in messages]
        _wait_for_calls(receiver, CAP)
        _wait_until(lambda: sum(f.done() for f in futures) == len(messages) - CAP)
        assert len(receiver.calls) == CAP  # the rest were turned away at the gate
        gate.set()
        outcomes = [f.result() for f in futures]

    assert sorted(o.state for o in outcomes) == ["running_cap"] * 4 + ["succeeded"] * CAP
    assert _holders(svc) == set()
    for record, _ in submitted:
        after = svc.executions.get(TENANT, record.execution_id)
        if after.state != ExecState.SUCCEEDED:
            assert (after.state, after.attempt, after.attempts) == (ExecState.PENDING, 1, [])


def test_every_waiting_execution_runs_once_slots_free_and_the_cap_is_never_passed(
    make_svc: ServicesFactory, clock: ManualClock, receiver: Receiver
) -> None:
    svc = _capped(make_svc)
    messages = [submit_to(svc, clock, receiver.url)[1] for _ in range(7)]
    seen_holders: list[int] = []
    outcomes: list[RunOutcome] = []
    left: list[LaneMessage] = messages
    for _ in range(10):  # each round: every waiting message offered again, three at a time
        if not left:
            break
        with ThreadPoolExecutor(3) as pool:
            round_outcomes = list(pool.map(svc.runner.process, left))
        seen_holders.append(len(_holders(svc)))
        outcomes += round_outcomes
        left = [m for m, o in zip(left, round_outcomes, strict=True) if o.state == "running_cap"]

    assert left == []
    assert sorted(c.header("Takt-Execution-Id") or "" for c in receiver.calls) == sorted(
        m.execution_id for m in messages
    )
    assert all(n <= CAP for n in seen_holders)
    assert [o.state for o in outcomes].count("succeeded") == 7


def test_an_expired_lease_frees_its_slot_and_the_late_worker_does_not_free_the_next_holders(
    make_svc: ServicesFactory, clock: ManualClock, receiver: Receiver
) -> None:
    svc = make_svc(tenant_limit_overrides={TENANT: TenantLimits(max_running=1)}, lease_sec=5.0)
    gate = threading.Event()
    receiver.script(Reply(gate=gate))
    record, message = submit_to(svc, clock, receiver.url)

    with ThreadPoolExecutor(1) as pool:
        stuck = pool.submit(svc.runner.process, message)
        _wait_for_calls(receiver, 1)
        assert _holders(svc) == {record.execution_id}
        clock.advance(60)
        svc.watchdog.sweep(clock.now())
        assert _holders(svc) == set()
        retry = svc.executions.get(TENANT, record.execution_id)
        assert (retry.state, retry.attempt) == (ExecState.PENDING, 2)
        assert svc.runner.process(Outgoing.of(retry).message).state == "succeeded"
        gate.set()
        assert stuck.result().state == "fenced"
    assert _holders(svc) == set()


def test_a_leaked_slot_is_freed_by_the_second_repair_and_a_slot_in_use_never(
    make_svc: ServicesFactory,
) -> None:
    svc = make_svc()
    slots = RunningSlots(svc.clients.dynamodb, svc.settings.tenants_table)
    for execution_id in ("leaked", "running"):
        assert slots.acquire(TENANT, execution_id, CAP)
    assert not slots.acquire(TENANT, "third", CAP)

    def running(execution_id: str) -> bool:
        return execution_id == "running"

    assert slots.repair(TENANT, running) == 0  # a suspect: it may be about to lease
    assert slots.repair(TENANT, running) == 1
    assert slots.holders(TENANT) == {"running"}
    assert slots.acquire(TENANT, "third", CAP)
