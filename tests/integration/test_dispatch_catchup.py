"""After an outage the ticker finds what it missed, and each job's catch-up policy decides which
missed occurrences run and which are recorded as skipped (DESIGN invariant 1: none is lost)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from takt.clock import ManualClock
from takt.models.ids import execution_id
from takt.models.records import CatchupPolicy, ExecState, OverlapPolicy
from takt.wiring import Services
from tests.support.history import Expect, HistoryChecker
from tests.support.jobs import TENANT, make_job, store_job

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _minutes(*values: int) -> list[datetime]:
    return [NOON + timedelta(minutes=m) for m in values]


def _outage(
    svc: Services,
    clock: ManualClock,
    catchup: CatchupPolicy,
    back_at: datetime,
    window: str,
    overlap: OverlapPolicy = "allow",
) -> str:
    """A `*/5` job due at noon; the ticker ran at 11:59, then nothing until `back_at`."""
    clock.set(NOON - timedelta(minutes=1))
    job = make_job(
        now=clock.now(),
        next_run_time=NOON,
        schedule="*/5 * * * *",
        catchup=catchup,
        catchup_window=window,
        overlap=overlap,
    )
    store_job(svc, job, clock.now())
    svc.ticker.tick(clock.now())
    clock.set(back_at)
    svc.ticker.tick(clock.now())
    return job.job_id


@pytest.mark.parametrize(
    ("catchup", "back_at", "window", "run", "skipped"),
    [
        pytest.param("once", 13, "1h", [10], [0, 5], id="once-runs-the-latest"),
        pytest.param("all", 13, "9m", [5, 10], [0], id="all-runs-those-in-the-window"),
        pytest.param("all", 13, "1h", [0, 5, 10], [], id="all-runs-every-missed"),
        pytest.param("skip", 13, "1h", [], [0, 5, 10], id="skip-drops-a-late-latest"),
        pytest.param("skip", 10, "1h", [10], [0, 5], id="skip-runs-a-fresh-latest"),
    ],
)
def test_catchup_policy_decides_runs_and_skips_after_an_outage(
    svc: Services,
    clock: ManualClock,
    checker: HistoryChecker,
    catchup: CatchupPolicy,
    back_at: int,
    window: str,
    run: list[int],
    skipped: list[int],
) -> None:
    # The scheduler comes back at the start of minute `back_at`, when the ticker sweeps its backlog.
    job_id = _outage(svc, clock, catchup, NOON + timedelta(minutes=back_at), window)

    report = checker.check(
        [Expect(job_id, _minutes(*run), _minutes(15)[0], skipped=_minutes(*skipped))]
    )

    assert report.problems() == []
    reasons = {r.reason for r in report.executions[job_id] if r.state == ExecState.SKIPPED}
    assert reasons <= {f"catchup={catchup}"}
    assert len(report.messages) == len(run)


def test_catchup_all_with_overlap_skip_runs_the_oldest_missed_and_skips_the_rest_as_overlapping(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    rule = (
        "catch-up all with overlap skip: the oldest missed occurrence in the window runs and "
        "holds the slot; the others, and the next while it is open, are skipped as overlapping"
    )
    job_id = _outage(svc, clock, "all", NOON + timedelta(minutes=13), "1h", overlap="skip")

    report = checker.check([Expect(job_id, _minutes(0), _minutes(15)[0], skipped=_minutes(5, 10))])
    oldest = execution_id(job_id, NOON)

    assert report.problems() == [], rule
    assert {r.reason for r in report.executions[job_id] if r.state == ExecState.SKIPPED} == {
        "overlap=skip"
    }, rule
    assert [m.execution_id for m in report.messages] == [oldest], rule
    assert (checker.job_item(TENANT, job_id) or {}).get("active_execution") == {"S": oldest}, rule

    clock.set(NOON + timedelta(minutes=15, seconds=1))
    svc.ticker.tick(clock.now())
    later = checker.check(
        [Expect(job_id, _minutes(0), _minutes(20)[0], skipped=_minutes(5, 10, 15))]
    )

    at_15 = {r.scheduled_time: r for r in later.executions[job_id]}[_minutes(15)[0]]
    assert (at_15.state, at_15.reason) == (ExecState.SKIPPED, "overlap=skip"), rule
    assert (later.missed, later.position, later.messages) == ([], [], []), rule


def test_a_one_off_job_runs_however_late(
    svc: Services, clock: ManualClock, checker: HistoryChecker
) -> None:
    clock.set(NOON - timedelta(minutes=1))
    job = store_job(svc, make_job(now=clock.now(), next_run_time=NOON), clock.now())
    svc.ticker.tick(clock.now())
    clock.set(NOON + timedelta(minutes=40))

    svc.ticker.tick(clock.now())

    assert checker.check([Expect(job.job_id, [NOON], None)]).problems() == []


def test_skipped_occurrences_are_terminal_and_never_sent(svc: Services, clock: ManualClock) -> None:
    job_id = _outage(svc, clock, "once", NOON + timedelta(minutes=13), "1h")

    page, _ = svc.executions.list_for_job(TENANT, job_id, limit=10, cursor=None)

    skipped = [r for r in page if r.state == ExecState.SKIPPED]
    assert len(skipped) == 2
    assert all(r.finished_at is not None for r in skipped)
    candidates = {
        i.execution_id
        for s in range(svc.executions.open_shards)
        for i in svc.executions.open_candidates(str(s), 2**62)
    }
    assert candidates.isdisjoint(r.execution_id for r in skipped)
