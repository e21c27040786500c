"""A target host's rate limit, shared by every worker: a token bucket in the tenants table. A
message without a token comes back when the next token is due, pending at its attempt; nothing
fails because of the limit, and the calls the receiver sees never outrun the bucket."""

from __future__ import annotations

from takt.clock import ManualClock
from takt.config import RateLimit
from takt.models.lanes import LaneMessage
from takt.models.records import ExecState
from takt.wiring import Services
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.integration.worker.conftest import submit_to
from tests.support.env import ServicesFactory
from tests.support.jobs import TENANT
from tests.support.lanes import RecordingLanes
from tests.support.receiver import Receiver

PER_SEC = 2.0
BURST = 2


def _limited(make_svc: ServicesFactory) -> Services:
    return make_svc(host_rate_limits={"127.0.0.1": RateLimit(per_sec=PER_SEC, burst=BURST)})


def test_without_a_token_the_message_comes_back_when_the_next_token_is_due(
    make_svc: ServicesFactory, clock: ManualClock, receiver: Receiver
) -> None:
    svc = _limited(make_svc)
    lanes = RecordingLanes(svc)
    runner = ExecutionRunner(
        RunnerSettings.of(svc.settings),
        svc.jobs,
        svc.executions,
        lanes,
        svc.targets,
        clock,
        gate=svc.gate,
    )
    submitted = [submit_to(svc, clock, receiver.url) for _ in range(3)]

    states = [runner.process(message).state for _, message in submitted]

    assert states == ["succeeded", "succeeded", "rate_limited"]
    assert len(receiver.calls) == BURST
    assert [(s.lane, s.delay_sec) for s in lanes.sent] == [("default", 1)]
    waiting = svc.executions.get(TENANT, submitted[2][0].execution_id)
    assert (waiting.state, waiting.attempt, waiting.attempts) == (ExecState.PENDING, 1, [])


def test_calls_never_outrun_the_bucket_and_every_execution_succeeds(
    make_svc: ServicesFactory, clock: ManualClock, receiver: Receiver
) -> None:
    svc = _limited(make_svc)
    start = clock.now()
    left: list[LaneMessage] = [submit_to(svc, clock, receiver.url)[1] for _ in range(8)]
    states: list[str] = []
    for _ in range(20):  # every half second, every waiting message offered again
        outcomes = [svc.runner.process(message) for message in left]
        states += [o.state for o in outcomes]
        elapsed = (clock.now() - start).total_seconds()
        assert len(receiver.calls) <= BURST + PER_SEC * elapsed
        left = [m for m, o in zip(left, outcomes, strict=True) if o.state == "rate_limited"]
        if not left:
            break
        clock.advance(0.5)

    assert left == []
    assert states.count("succeeded") == 8
    assert set(states) == {"succeeded", "rate_limited"}
    assert len(receiver.calls) == 8


def test_hosts_without_a_limit_are_not_held_back(
    make_svc: ServicesFactory, clock: ManualClock, receiver: Receiver
) -> None:
    svc = make_svc(host_rate_limits={"api.example.com": RateLimit(per_sec=0.1, burst=1)})
    states = [svc.runner.process(submit_to(svc, clock, receiver.url)[1]).state for _ in range(4)]
    assert states == ["succeeded"] * 4
