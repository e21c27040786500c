"""Jitter, pause-until, calendars and overlap=replace through the API service, the indexer and
the claimer, across DST changes; croniter (in UTC, where the zone's rule is plain) gives the
nominal instants."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from takt.api.errors import InvalidRequestError
from takt.api.jobs import JobService
from takt.api.models import JobPatch
from takt.clock import ManualClock
from takt.models.calendars import CalendarBody, DailyWindow
from takt.models.ids import execution_id
from takt.models.records import ExecState
from takt.schedule import jitter_offset
from takt.store.executions import Transition
from takt.wiring import Services
from tests.support.history import HistoryChecker
from tests.support.indexer import index_due
from tests.support.jobs import TENANT, create_through_api, occurrence_history

TARGET = "https://example.com/hook"
NEW_YORK = ZoneInfo("America/New_York")
# New York falls back on 1 November 2026 (2:00 EDT -> 1:00 EST).
FALL_BACK_EVE = datetime(2026, 10, 31, 22, 0, tzinfo=UTC)


def test_jittered_occurrences_fire_late_but_keep_their_nominal_identity_across_dst(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(FALL_BACK_EVE)
    job = create_through_api(
        svc, TARGET, schedule="0 * * * *", time_zone="America/New_York", jitter="15m"
    )
    index_due(svc)
    # An hourly job in a whole-hour zone fires every UTC hour, both passes of the repeated hour
    # included: croniter in UTC is the oracle for the nominal instants.
    nominal = list(islice(croniter("0 * * * *", FALL_BACK_EVE).all_next(datetime), 8))
    fired: list[datetime] = []
    for t in nominal:
        offset = jitter_offset(job.job_id, t, timedelta(minutes=15))
        assert timedelta(0) <= offset < timedelta(minutes=15)
        # The claim looks `dispatch_ahead_sec` (1 s) ahead: 2 s before is not yet due.
        clock.set(t + offset - timedelta(seconds=2))
        before = svc.ticker.tick(clock.now()).total.dispatched
        clock.set(t + offset)
        at = svc.ticker.tick(clock.now()).total.dispatched
        assert (before, at) == (0, 1), t
        fired.append(t + offset)

    history = occurrence_history(svc, job.job_id)
    assert [h[0] for h in history] == nominal
    assert {h[1] for h in history} == {ExecState.PENDING}
    assert execution_id(job.job_id, nominal[0]) in {
        r.execution_id
        for r in svc.executions.list_for_job(TENANT, job.job_id, limit=20, cursor=None)[0]
    }
    # Deterministic but spread: eight hours, eight different offsets.
    assert len({f - t for f, t in zip(fired, nominal, strict=True)}) == 8


def test_the_preview_shows_the_jittered_firing_beside_the_occurrence(
    svc: Services, clock: ManualClock
) -> None:
    job = create_through_api(svc, TARGET, schedule="0 9 * * *", time_zone="UTC", jitter="10m")
    _, runs = JobService(svc.api).next_runs(TENANT, job.job_id, 3)
    assert [job.fire_time(r) - r for r in runs] == [
        jitter_offset(job.job_id, r, timedelta(minutes=10)) for r in runs
    ]


def test_changing_the_jitter_moves_the_due_item(svc: Services, clock: ManualClock) -> None:
    job = create_through_api(svc, TARGET, schedule="0 9 * * *", time_zone="UTC")
    index_due(svc)
    JobService(svc.api).update(TENANT, job.job_id, JobPatch(jitter="1h"), None)
    index_due(svc)
    stored = svc.jobs.get(TENANT, job.job_id)
    assert stored.next_run_time is not None
    dues = {d.due for d in HistoryChecker(svc).due_items()}
    assert stored.fire_time(stored.next_run_time) in dues


def test_pause_until_across_dst_skips_the_span_unrecorded_and_resumes_by_itself(
    svc: Services, clock: ManualClock
) -> None:
    clock.set(datetime(2026, 10, 29, 12, 0, tzinfo=UTC))
    until = datetime(2026, 11, 3, 0, 0, tzinfo=UTC)
    job = create_through_api(svc, TARGET, schedule="0 9 * * *", time_zone="America/New_York")
    index_due(svc)
    paused = JobService(svc.api).update(TENANT, job.job_id, JobPatch(pause_until=until), None)
    index_due(svc)

    expected = croniter("0 9 * * *", until.astimezone(NEW_YORK)).get_next(datetime)
    assert (
        paused.next_run_time == expected.astimezone(UTC) == datetime(2026, 11, 3, 14, 0, tzinfo=UTC)
    )
    # Tick at each instant the job would have fired without the pause (the fall-back included).
    unpaused = croniter("0 9 * * *", datetime(2026, 10, 29, 12, 0, tzinfo=UTC).astimezone(NEW_YORK))
    for _ in range(5):
        clock.set(unpaused.get_next(datetime).astimezone(UTC))
        svc.ticker.tick(clock.now())
    assert clock.now() < until
    assert occurrence_history(svc, job.job_id) == []
    clock.set(datetime(2026, 11, 3, 14, 0, tzinfo=UTC))
    svc.ticker.tick(clock.now())
    assert occurrence_history(svc, job.job_id) == [
        (expected.astimezone(UTC), ExecState.PENDING, None)
    ]
    assert svc.jobs.get(TENANT, job.job_id).next_run_time == datetime(
        2026, 11, 4, 14, 0, tzinfo=UTC
    )


def test_resuming_ends_a_pause_until_now(svc: Services, clock: ManualClock) -> None:
    job = create_through_api(
        svc, TARGET, interval="1h", pause_until=(clock.now() + timedelta(days=2)).isoformat()
    )
    assert job.next_run_time == clock.now() + timedelta(days=2)
    resumed = JobService(svc.api).update(
        TENANT, job.job_id, JobPatch.model_validate({"pause_until": None}), None
    )
    assert resumed.next_run_time == clock.now() + timedelta(hours=1)


def test_overlap_replace_cancels_a_waiting_run_and_stops_a_running_one(
    svc: Services, clock: ManualClock
) -> None:
    job = create_through_api(svc, TARGET, schedule="* * * * *", overlap="replace")
    index_due(svc)
    first = job.next_run_time
    assert first is not None
    clock.set(first)
    svc.ticker.tick(clock.now())
    clock.set(first + timedelta(minutes=1))
    svc.ticker.tick(clock.now())

    history = occurrence_history(svc, job.job_id)
    assert [(h[0], h[1]) for h in history] == [
        (first, ExecState.CANCELLED),
        (first + timedelta(minutes=1), ExecState.PENDING),
    ]
    assert "overlap=replace" in (history[0][2] or "")
    second_id = execution_id(job.job_id, first + timedelta(minutes=1))
    assert svc.jobs.get(TENANT, job.job_id).active_execution == second_id

    svc.executions.transition(
        TENANT,
        second_id,
        Transition(
            expect={"state": ExecState.PENDING, "attempt": 1},
            set={"state": ExecState.RUNNING, "lease_token": "lease-1"},
        ),
    )
    clock.set(first + timedelta(minutes=2))
    svc.ticker.tick(clock.now())
    running = svc.executions.get(TENANT, second_id)
    assert (running.state, running.cancel_requested) == (ExecState.RUNNING, True)
    third_id = execution_id(job.job_id, first + timedelta(minutes=2))
    assert svc.executions.get(TENANT, third_id).state == ExecState.PENDING
    assert svc.jobs.get(TENANT, job.job_id).active_execution == third_id


def test_occurrences_in_a_calendars_window_are_recorded_as_skipped_across_dst(
    svc: Services, clock: ManualClock
) -> None:
    svc.calendars.put(
        TENANT,
        "nights",
        CalendarBody(
            time_zone="America/New_York", daily=[DailyWindow(start=time(0, 0), end=time(4, 0))]
        ),
        clock.now(),
        create=True,
    )
    clock.set(datetime(2026, 11, 1, 3, 30, tzinfo=UTC))
    job = create_through_api(
        svc, TARGET, schedule="0 * * * *", time_zone="America/New_York", calendars=["nights"]
    )
    index_due(svc)
    nominal = list(islice(croniter("0 * * * *", clock.now()).all_next(datetime), 7))
    for t in nominal:
        clock.set(t)
        svc.ticker.tick(clock.now())

    history = occurrence_history(svc, job.job_id)
    assert [h[0] for h in history] == nominal
    # 00:00 EDT, 01:00 EDT, 01:00 EST, 02:00 EST and 03:00 EST are inside; 04:00 and 05:00 EST not.
    assert [h[1] for h in history] == [ExecState.SKIPPED] * 5 + [ExecState.PENDING] * 2
    assert history[0][2] == "calendar nights: daily window 00:00-04:00"


def test_a_job_naming_a_missing_calendar_is_refused(svc: Services, clock: ManualClock) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        create_through_api(svc, TARGET, interval="1h", calendars=["nope"])
    assert [e["field"] for e in refused.value.errors or []] == ["calendars"]
