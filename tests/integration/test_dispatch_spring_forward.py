"""Jitter, pause-until and calendars across spring-forward, beside the fall-back cases in
test_dispatch_jitter_pause.py: Berlin's clock jumps from 02:00 CET to 03:00 CEST at 01:00 UTC on
29 March 2026, so 02:30 does not exist that day. The expected instants are written out from the
tz database's offsets and Vixie's rule (a fixed time the clock skips runs at the jump), not
computed by takt.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from takt.api.jobs import JobService
from takt.api.models import JobPatch
from takt.clock import ManualClock
from takt.models.calendars import CalendarBody, DailyWindow
from takt.models.records import ExecState
from takt.schedule import jitter_offset
from takt.wiring import Services
from tests.support.indexer import index_due
from tests.support.jobs import TENANT, create_through_api, occurrence_history

TARGET = "https://example.com/hook"
# 02:30 in Berlin: 01:30 UTC in CET (+1), 00:30 UTC in CEST (+2); on 29 March the clock skips it
# and the job runs at the jump, 01:00 UTC.
NIGHTLY = [
    datetime(2026, 3, 28, 1, 30, tzinfo=UTC),
    datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
    datetime(2026, 3, 30, 0, 30, tzinfo=UTC),
]


def test_a_jittered_job_whose_time_the_clock_skips_fires_after_the_jump(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(datetime(2026, 3, 27, 12, 0, tzinfo=UTC))
    job = create_through_api(
        svc, TARGET, schedule="30 2 * * *", time_zone="Europe/Berlin", jitter="10m"
    )
    index_due(svc)
    for t in NIGHTLY:
        offset = jitter_offset(job.job_id, t, timedelta(minutes=10))
        assert timedelta(0) <= offset < timedelta(minutes=10)
        clock.set(t + offset - timedelta(seconds=2))
        before = svc.ticker.tick(clock.now()).total.dispatched
        clock.set(t + offset)
        at = svc.ticker.tick(clock.now()).total.dispatched
        assert (before, at) == (0, 1), t

    assert [h[0] for h in occurrence_history(svc, job.job_id)] == NIGHTLY


def test_a_pause_until_ending_before_a_skipped_time_resumes_at_the_jump(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(datetime(2026, 3, 26, 12, 0, tzinfo=UTC))
    job = create_through_api(svc, TARGET, schedule="30 2 * * *", time_zone="Europe/Berlin")
    index_due(svc)
    until = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    paused = JobService(svc.api).update(TENANT, job.job_id, JobPatch(pause_until=until), None)
    index_due(svc)

    assert paused.next_run_time == NIGHTLY[1]
    # Tick at each instant the job would have fired without the pause: 27 and 28 March.
    for unpaused in (
        datetime(2026, 3, 27, 1, 30, tzinfo=UTC),
        datetime(2026, 3, 28, 1, 30, tzinfo=UTC),
    ):
        clock.set(unpaused)
        svc.ticker.tick(clock.now())
    assert clock.now() < until
    assert (
        occurrence_history(svc, job.job_id) == []
    )  # 27 and 28 March fell in the pause: not recorded
    clock.set(NIGHTLY[1])
    svc.ticker.tick(clock.now())
    assert occurrence_history(svc, job.job_id) == [(NIGHTLY[1], ExecState.PENDING, None)]
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == NIGHTLY[2]


def test_a_calendars_window_loses_the_hour_spring_forward_skips(
    svc: Services, clock: ManualClock
) -> None:
    svc.calendars.put(
        TENANT,
        "nights",
        CalendarBody(time_zone="Europe/Berlin", daily=[DailyWindow(start=time(1), end=time(4))]),
        clock.now(),
        create=True,
    )
    clock.set(datetime(2026, 3, 28, 23, 30, tzinfo=UTC))
    job = create_through_api(
        svc, TARGET, schedule="0 * * * *", time_zone="Europe/Berlin", calendars=["nights"]
    )
    index_due(svc)
    # Every UTC hour: 01:00 CET, 03:00 CEST (inside 01:00-04:00), 04:00 and 05:00 CEST (not).
    nominal = [datetime(2026, 3, 29, hour, 0, tzinfo=UTC) for hour in range(4)]
    for t in nominal:
        clock.set(t)
        svc.ticker.tick(clock.now())

    history = occurrence_history(svc, job.job_id)
    assert [h[0] for h in history] == nominal
    assert [h[1] for h in history] == [ExecState.SKIPPED] * 2 + [ExecState.PENDING] * 2
    assert history[1][2] == "calendar nights: daily window 01:00-04:00"
