"""Recounting a tenant's job counter (the one its `max_jobs` limit goes by) from the jobs table,
and `takt tenants recount`, which runs it.

Jobs written with `svc.jobs.create`/`delete` bypass the counter, as jobs stored before counting
began did, or a crash between steps would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.config import Settings
from takt.models.records import JobRecord
from takt.tenants import Recount, RecountError
from takt.tenants.limits import RECOUNT_TRIES
from takt.wiring import Services
from takt_cli.commands.main import main
from tests.support.faults import interleave
from tests.support.jobs import TENANT, make_job


def stored_job(svc: Services, clock: ManualClock, *, counted: bool) -> JobRecord:
    job = make_job(now=clock.now(), next_run_time=clock.now(), tenant_id=TENANT)
    if counted:
        svc.limiter.create_job(job)
    else:
        svc.jobs.create(job)
    return job


@pytest.fixture
def small_pages(svc: Services) -> Iterator[None]:
    """Every Query of the test's client returns at most two items' worth, so counts page."""

    def two_at_a_time(params: dict[str, Any], **_: Any) -> None:
        params["Limit"] = 2

    events = svc.clients.dynamodb.meta.events
    events.register("provide-client-params.dynamodb.Query", two_at_a_time)
    try:
        yield
    finally:
        events.unregister("provide-client-params.dynamodb.Query", two_at_a_time)


def test_recount_adds_jobs_stored_before_counting_began(svc: Services, clock: ManualClock) -> None:
    stored_job(svc, clock, counted=True)
    for _ in range(2):
        stored_job(svc, clock, counted=False)

    result = svc.limiter.recount(TENANT)

    assert result == Recount(before=1, after=3)
    assert svc.limiter.job_count(TENANT) == 3


def test_recount_takes_off_jobs_deleted_without_the_counter(
    svc: Services, clock: ManualClock
) -> None:
    jobs = [stored_job(svc, clock, counted=True) for _ in range(3)]
    svc.jobs.delete(TENANT, jobs[0].job_id)

    result = svc.limiter.recount(TENANT)

    assert result == Recount(before=3, after=2)
    assert svc.limiter.job_count(TENANT) == 2


def test_a_recount_is_kept_by_later_creates_and_deletes(svc: Services, clock: ManualClock) -> None:
    stored_job(svc, clock, counted=False)
    svc.limiter.recount(TENANT)

    stored_job(svc, clock, counted=True)
    first = stored_job(svc, clock, counted=True)
    svc.limiter.delete_job(TENANT, first.job_id)

    assert svc.limiter.job_count(TENANT) == svc.limiter.count_jobs(TENANT) == 2


@pytest.mark.usefixtures("small_pages")
def test_recount_counts_every_page(svc: Services, clock: ManualClock) -> None:
    for _ in range(5):
        stored_job(svc, clock, counted=False)

    assert svc.limiter.recount(TENANT) == Recount(before=0, after=5)


def test_recount_of_an_unknown_tenant_is_zero_and_writes_nothing(svc: Services) -> None:
    result = svc.limiter.recount("nobody")

    assert result == Recount(before=0, after=0)
    item = svc.clients.dynamodb.get_item(
        TableName=svc.settings.tenants_table,
        Key={"tenant_id": {"S": "nobody"}, "counter": {"S": "jobs"}},
    )
    assert "Item" not in item


def test_recount_counts_only_the_tenants_own_jobs(svc: Services, clock: ManualClock) -> None:
    stored_job(svc, clock, counted=False)
    other = make_job(now=clock.now(), next_run_time=clock.now(), tenant_id="tenant-b")
    svc.jobs.create(other)

    assert svc.limiter.recount("tenant-b") == Recount(before=0, after=1)


def test_a_create_while_counting_is_not_lost(svc: Services, clock: ManualClock) -> None:
    stored_job(svc, clock, counted=False)
    landed: list[JobRecord] = []

    def create_once() -> None:
        if not landed:
            landed.append(stored_job(svc, clock, counted=True))

    racing = interleave(svc.limiter, "count_jobs", create_once)

    result = racing.recount(TENANT)

    assert result == Recount(before=1, after=2)
    assert svc.limiter.job_count(TENANT) == 2


def test_a_delete_and_create_while_counting_that_leave_the_counter_alone_are_not_lost(
    svc: Services, clock: ManualClock
) -> None:
    """The counter reads the same number after them; its `changes` does not."""
    doomed = stored_job(svc, clock, counted=True)
    stored_job(svc, clock, counted=False)
    moves: list[str] = []

    def swap_once() -> None:
        if not moves:
            moves.append("swapped")
            svc.limiter.delete_job(TENANT, doomed.job_id)
            stored_job(svc, clock, counted=True)
            stored_job(svc, clock, counted=False)

    racing = interleave(svc.limiter, "count_jobs", swap_once)

    result = racing.recount(TENANT)

    assert result == Recount(before=1, after=3)
    assert svc.limiter.job_count(TENANT) == 3


def test_a_recount_that_never_sees_a_still_moment_gives_up(
    svc: Services, clock: ManualClock
) -> None:
    stored_job(svc, clock, counted=False)

    def another_create() -> None:
        stored_job(svc, clock, counted=True)

    busy = interleave(svc.limiter, "count_jobs", another_create)

    with pytest.raises(RecountError, match=f"each of {RECOUNT_TRIES} counts"):
        busy.recount(TENANT)


# `takt tenants recount`


@pytest.fixture
def cli_settings(monkeypatch: pytest.MonkeyPatch, svc: Services) -> Settings:
    """The CLI reads the test's tables, as it would read TAKT_* from the environment."""
    monkeypatch.setattr("takt_cli.commands.tenants.get_settings", lambda: svc.settings)
    return svc.settings


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("cli_settings")
def test_the_cli_prints_the_count_before_and_after(
    svc: Services, clock: ManualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    stored_job(svc, clock, counted=True)
    stored_job(svc, clock, counted=False)

    code, out, err = run(capsys, "tenants", "recount", TENANT)

    assert (code, err) == (0, "")
    assert out.splitlines() == ["TENANT    BEFORE  AFTER", f"{TENANT}  1       2"]


@pytest.mark.usefixtures("cli_settings")
def test_the_cli_prints_json_when_asked(
    svc: Services, clock: ManualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    stored_job(svc, clock, counted=False)

    code, out, _ = run(capsys, "-o", "json", "tenants", "recount", TENANT)

    assert code == 0
    assert json.loads(out) == {"tenant": TENANT, "before": 0, "after": 1}


@pytest.mark.usefixtures("cli_settings")
def test_the_cli_refuses_what_cannot_be_a_tenant_id(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "tenants", "recount", "acme#jobs")

    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert line.startswith("takt: error: ")
    assert "'acme#jobs' is not a tenant id" in line


def test_the_cli_names_the_tables_it_could_not_use(
    monkeypatch: pytest.MonkeyPatch, svc: Services, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = svc.settings.model_copy(update={"jobs_table": "no-such-jobs"})
    monkeypatch.setattr("takt_cli.commands.tenants.get_settings", lambda: missing)

    code, out, err = run(capsys, "tenants", "recount", TENANT)

    assert (code, out) == (1, "")
    [line] = err.splitlines()
    assert line.startswith(f"takt: error: cannot recount {TENANT} in tables no-such-jobs and ")
    assert "ResourceNotFoundException" in line


def test_the_cli_names_a_bad_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        "takt_cli.commands.tenants.get_settings", lambda: Settings(due_shards="many")
    )

    code, out, err = run(capsys, "tenants", "recount", TENANT)

    assert (code, out) == (1, "")
    [line] = err.splitlines()
    assert line.startswith("takt: error: TAKT_DUE_SHARDS: ")
