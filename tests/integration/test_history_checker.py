"""The history checker itself: it must see each kind of breach, or the crash tests prove nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from takt.clock import ManualClock
from takt.models.ids import execution_id
from takt.models.lanes import Outgoing
from takt.models.records import ExecState
from takt.wiring import Services
from tests.support.history import Expect, HistoryChecker
from tests.support.jobs import make_execution, make_job, store_execution, store_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
NEXT = NOON + timedelta(minutes=1)


def test_a_sound_history_has_no_problems(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    job = store_job(svc, make_job(now=NOON, next_run_time=NEXT, schedule="* * * * *"), NOON)
    record = store_execution(svc, make_execution(job, NOON, NOON), NOON)
    svc.lanes.send([Outgoing.of(record), Outgoing.of(record)])  # a duplicate is allowed

    report = checker.check([Expect(job.job_id, [NOON], NEXT)])

    assert report.problems() == []
    assert len(report.messages) == 2


def test_it_reports_a_missed_occurrence_and_one_that_was_not_due(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    job = store_job(svc, make_job(now=NOON, next_run_time=NEXT, schedule="* * * * *"), NOON)
    store_execution(svc, make_execution(job, NEXT, NOON, state=ExecState.SKIPPED), NOON)

    report = checker.check([Expect(job.job_id, [NOON], NEXT)])

    assert report.missed == [f"{job.job_id} @ {NOON.isoformat()}"]
    assert report.unexpected == [f"{execution_id(job.job_id, NEXT)} (skipped) was not due"]


def test_it_reports_a_run_where_a_skip_was_due(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    job = store_job(svc, make_job(now=NOON, next_run_time=NEXT, schedule="* * * * *"), NOON)
    store_execution(svc, make_execution(job, NOON, NOON, state=ExecState.SUCCEEDED), NOON)

    report = checker.check([Expect(job.job_id, [], NEXT, skipped=[NOON])])

    assert len(report.wrong_kind) == 1


def test_it_reports_a_job_left_unindexed_or_at_the_wrong_occurrence(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    job = make_job(now=NOON, next_run_time=NEXT, schedule="* * * * *")
    svc.jobs.create(job)  # no due item

    report = checker.check([Expect(job.job_id, [], NEXT + timedelta(minutes=1))])

    assert len(report.position) == 2  # wrong next_run_time, and no live due item


def test_it_reports_a_pending_execution_without_a_message(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    job = store_job(svc, make_job(now=NOON, next_run_time=NEXT, schedule="* * * * *"), NOON)
    record = store_execution(svc, make_execution(job, NOON, NOON), NOON)

    report = checker.check([Expect(job.job_id, [NOON], NEXT)])

    assert report.unsent == [f"{record.execution_id} attempt 1"]


def test_it_keeps_takts_own_fenced_count_as_its_account_not_a_problem(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    job = store_job(svc, make_job(now=NOON, next_run_time=NEXT, schedule="* * * * *"), NOON)
    record = store_execution(svc, make_execution(job, NOON, NOON, state=ExecState.RUNNING), NOON)
    svc.executions.record_fenced(record.tenant_id, record.execution_id)

    report = checker.check([Expect(job.job_id, [NOON], NEXT)])

    assert (report.takt_fenced, report.problems()) == (1, []), (
        "takt's own fenced count is read raw and kept apart from the verdict"
    )
