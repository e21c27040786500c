"""The top-of-minute burst claimed ahead (`burst_ahead_sec`): what is due in a minute's first
second is claimed from 30 s before it, its messages delayed by SQS until their second, and an
edit acknowledged before the due time still decides each occurrence at the worker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from takt.clock import ManualClock
from takt.dispatch.claimer import Claimer, ClaimerSettings
from takt.dispatch.ticker import BURST_EVERY_SEC
from takt.models.ids import execution_id
from takt.models.records import ExecState, JobStatus, TaskSpec
from takt.wiring import Services
from takt.worker.runner import ExecutionRunner, RunnerSettings
from tests.support.env import ServicesFactory
from tests.support.jobs import TENANT, job_id_in_shard, make_job, store_job
from tests.support.lanes import RecordingLanes, delayed_count, visible_count
from tests.support.receiver import Receiver

TOP = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
BURST_FROM = TOP - timedelta(seconds=30)


def _job_at(svc: Services, clock: ManualClock, due: datetime, **fields: object) -> str:
    job = make_job(
        now=clock.now(),
        next_run_time=due,
        job_id=job_id_in_shard(TENANT, 0, svc.due.shards),
        **fields,  # type: ignore[arg-type]
    )
    store_job(svc, job, clock.now())
    return job.job_id


def _claimer(svc: Services, lanes: RecordingLanes) -> Claimer:
    return Claimer(ClaimerSettings.of(svc.settings), svc.jobs, svc.due, svc.executions, lanes)


def _state(svc: Services, job_id: str, due: datetime) -> ExecState | None:
    page, _ = svc.executions.list_for_job(TENANT, job_id, limit=10, cursor=None)
    return next((r.state for r in page if r.scheduled_time == due), None)


def test_the_minutes_first_second_is_claimed_30_s_ahead_and_delayed_until_then(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(BURST_FROM - timedelta(minutes=1))
    burst = _job_at(svc, clock, TOP, schedule="0 * * * *")
    at_half = _job_at(svc, clock, TOP + timedelta(milliseconds=500))
    later = _job_at(svc, clock, TOP + timedelta(seconds=1))
    lanes = RecordingLanes(svc)

    result = _claimer(svc, lanes).claim(TOP, 0, BURST_FROM)

    assert result.dispatched == 2
    assert _state(svc, burst, TOP) == ExecState.PENDING
    assert _state(svc, at_half, TOP + timedelta(milliseconds=500)) == ExecState.PENDING
    assert _state(svc, later, TOP + timedelta(seconds=1)) is None
    assert svc.jobs.get(TENANT, burst).next_run_time == TOP + timedelta(hours=1)
    # Each message waits in SQS for the whole seconds to its time, less what the claim took.
    delays = {o.message.job_id: o.delay_sec for o in lanes.sent}
    assert 27 <= delays[burst] <= 29
    assert delays[burst] <= delays[at_half] <= 30
    assert (visible_count(svc), delayed_count(svc)) == (0, 2)


def test_the_watchdog_does_not_resend_a_burst_message_before_it_could_be_taken(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(BURST_FROM - timedelta(minutes=1))
    _job_at(svc, clock, TOP)
    _claimer(svc, RecordingLanes(svc)).claim(TOP, 0, BURST_FROM)

    # The resend wait (30 s) after the claim has passed, with the watchdog's clock margin, but
    # not after the message's own time, when it first became visible.
    settings = svc.settings
    wait = settings.pending_resend_after_sec + settings.clock_margin_sec + 1
    clock.set(BURST_FROM + timedelta(seconds=wait))
    swept = svc.watchdog.sweep(clock.now())

    assert swept.resent == 0
    assert (visible_count(svc), delayed_count(svc)) == (0, 1)


def test_a_job_whose_run_depends_on_its_instant_waits_for_the_regular_claim(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(BURST_FROM - timedelta(minutes=1))
    skip = _job_at(svc, clock, TOP, schedule="0 * * * *", overlap="skip")
    flow = _job_at(
        svc,
        clock,
        TOP,
        schedule="0 * * * *",
        target="workflow",
        tasks=[TaskSpec(id="a", target="https://e/x")],
    )
    claimer = _claimer(svc, RecordingLanes(svc))

    early = claimer.claim(TOP, 0, BURST_FROM)
    assert (early.dispatched, early.left) == (0, 2)
    assert (_state(svc, skip, TOP), _state(svc, flow, TOP)) == (None, None)

    on_time = claimer.claim(TOP, 0, TOP - timedelta(seconds=svc.settings.dispatch_ahead_sec))
    assert _state(svc, skip, TOP) == ExecState.PENDING
    assert _state(svc, flow, TOP) == ExecState.RUNNING
    assert on_time.left == 0


def test_an_edit_after_the_early_claim_and_before_the_minute_still_decides(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    clock.set(BURST_FROM - timedelta(minutes=1))
    paused = _job_at(svc, clock, TOP, target=receiver.url)
    kept = _job_at(svc, clock, TOP, target=receiver.url)
    lanes = RecordingLanes(svc)
    _claimer(svc, lanes).claim(TOP, 0, BURST_FROM)
    messages = {o.message.job_id: o.message for o in lanes.sent}

    clock.set(TOP - timedelta(seconds=10))
    job = svc.jobs.get(TENANT, paused)
    svc.jobs.update_definition(
        job.model_copy(update={"status": JobStatus.PAUSED, "version": 2}), 1, {"status"}
    )
    clock.set(TOP)
    runner = ExecutionRunner(
        RunnerSettings.of(svc.settings),
        svc.jobs,
        svc.executions,
        lanes,
        svc.targets,
        svc.clock,
        worker_id="w",
    )

    assert runner.process(messages[paused]).state == "skipped"
    assert runner.process(messages[kept]).state == "succeeded"
    assert len(receiver.calls) == 1
    record = svc.executions.get(TENANT, execution_id(paused, TOP))
    assert record.reason is not None
    assert "paused" in record.reason


def test_the_ticker_sweeps_the_next_minute_from_30_s_before_it(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(BURST_FROM - timedelta(minutes=1))
    job_id = _job_at(svc, clock, TOP)
    svc.ticker.tick(BURST_FROM - timedelta(seconds=BURST_EVERY_SEC))
    assert _state(svc, job_id, TOP) is None

    result = svc.ticker.tick(BURST_FROM)

    assert result.total.dispatched == 1
    assert _state(svc, job_id, TOP) == ExecState.PENDING


def test_without_burst_ahead_the_minute_is_claimed_like_any_second(
    make_svc: ServicesFactory, clock: ManualClock
) -> None:
    svc = make_svc(burst_ahead_sec=0)
    clock.set(BURST_FROM - timedelta(minutes=1))
    job_id = _job_at(svc, clock, TOP)

    assert svc.ticker.tick(BURST_FROM).total.dispatched == 0
    assert _state(svc, job_id, TOP) is None
    assert svc.ticker.tick(TOP - timedelta(seconds=1)).total.dispatched == 1
