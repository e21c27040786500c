"""Times and history as the CLI shows them (issue 29, "Times"): one rule for how an instant is
printed (RFC 3339, to the second, or to the millisecond when the instant has any; never
microseconds), a job's time zone beside its schedule, and a deleted job's history reachable."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from takt.clock import format_local, format_time
from takt.schedule import describe
from takt.schedule.model import IntervalSchedule
from takt_cli.commands.context import CliContext
from takt_cli.commands.main import main
from takt_cli.commands.schedule import schedule
from tests.unit.cli.conftest import FakeApi

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("instant", "utc", "local"),
    [
        (datetime(2026, 12, 5, 9, 0, 14, tzinfo=UTC), "2026-12-05T09:00:14Z", "10:00:14+01:00"),
        (
            datetime(2026, 12, 5, 9, 0, 14, 442000, tzinfo=UTC),
            "2026-12-05T09:00:14.442Z",
            "10:00:14.442+01:00",
        ),
        (
            datetime(2026, 12, 5, 9, 0, 14, 442987, tzinfo=UTC),
            "2026-12-05T09:00:14.442Z",
            "10:00:14.442+01:00",
        ),
        (
            datetime(2026, 12, 5, 9, 0, 14, 500, tzinfo=UTC),
            "2026-12-05T09:00:14Z",
            "10:00:14+01:00",
        ),
    ],
)
def test_an_instant_prints_to_the_second_or_the_millisecond_never_microseconds(
    instant: datetime, utc: str, local: str
) -> None:
    assert format_time(instant) == utc, "one rule for times: seconds, milliseconds when not zero"
    assert format_local(instant, BERLIN) == f"2026-12-05T{local}", (
        "one rule for times: a local time has the same precision as its UTC one"
    )


def test_an_interval_s_description_prints_its_anchor_by_the_rule() -> None:
    anchor = datetime(2026, 12, 5, 9, 0, 14, 442000, tzinfo=UTC)

    phrase = describe(IntervalSchedule(every=timedelta(seconds=45), anchor=anchor))

    assert phrase == "every 45 seconds from 2026-12-05T09:00:14.442Z", (
        "one rule for times: a schedule's phrase prints no microseconds"
    )


@pytest.mark.parametrize("output", ["json", "table"])
def test_schedule_preview_of_an_interval_prints_times_by_the_rule(output: str) -> None:
    result = CliRunner().invoke(
        schedule,
        ["preview", "--every", "90m", "--after", "2026-10-01T12:00:00.123456Z", "--count", "1"],
        obj=CliContext(endpoint="", output=output),
    )

    assert result.exit_code == 0, result.exception
    shown = result.stdout
    assert "123456" not in shown, f"one rule for times: no microseconds in {shown!r}"
    if output == "json":
        assert json.loads(shown) == ["2026-10-01T13:30:00.123Z"]
    else:
        assert "2026-10-01T13:30:00.123Z  2026-10-01T13:30:00.123+00:00 UTC" in shown


def test_jobs_list_shows_each_job_s_time_zone(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    job = {"id": "job_01", "name": "r", "status": "active", "schedule": "0 6 * * *"}
    fake_api.answers["/v1/jobs"] = {"items": [{**job, "time_zone": "Europe/Berlin"}]}

    code = main(["--endpoint", fake_api.url, "-o", "table", "jobs", "list"])
    header, row = capsys.readouterr().out.splitlines()

    assert code == 0
    assert "TIME_ZONE" in header.split(), "a cron job's times are read in its zone: shown"
    assert "Europe/Berlin" in row.split(), "a cron job's times are read in its zone: shown"


def test_a_delete_prints_the_id_its_history_stays_reachable_by(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs/job_01"] = {}

    main(["--endpoint", fake_api.url, "-o", "table", "jobs", "delete", "job_01"])
    told = capsys.readouterr().err

    assert "takt executions list job_01" in told, "a delete says how its history stays reachable"


NEWER = {
    "id": "job_02",
    "name": "gone",
    "deleted_at": "2026-03-02T12:01:00Z",
    "history_until": "2026-03-09T12:01:00Z",
}
OLDER = {**NEWER, "id": "job_01", "deleted_at": "2026-03-02T12:00:00Z"}


def _listed(fake_api: FakeApi) -> list[str]:
    """The paths of the executions lists the CLI asked for."""
    paths = [r.target.split("?")[0] for r in fake_api.received]
    return [path for path in paths if path.endswith("/executions")]


def test_a_deleted_job_s_history_is_found_by_the_name_it_had(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [], "next_cursor": None}
    fake_api.answers["/v1/deleted-jobs"] = {"items": [NEWER, OLDER]}
    fake_api.answers["/v1/jobs/job_02/executions"] = {"items": [], "next_cursor": None}

    code = main(["--endpoint", fake_api.url, "executions", "list", "gone"])
    told = capsys.readouterr().err

    assert code == 0, told
    assert _listed(fake_api) == ["/v1/jobs/job_02/executions"], (
        "a deleted job's history is found by the name it had, newest deletion first"
    )
    assert "job_02, named 'gone', was deleted at 2026-03-02T12:01:00Z" in told
    assert "kept until 2026-03-09T12:01:00Z" in told
    assert "1 earlier deleted job(s) had the name: takt jobs deleted gone" in told


def test_the_next_page_of_a_deleted_job_s_history_goes_by_its_id(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [], "next_cursor": None}
    fake_api.answers["/v1/deleted-jobs"] = {"items": [NEWER]}
    fake_api.answers["/v1/jobs/job_02/executions"] = {"items": [], "next_cursor": "c1"}

    code = main(["--endpoint", fake_api.url, "-o", "table", "executions", "list", "gone"])
    told = capsys.readouterr().err

    assert code == 0
    assert "next page: takt executions list job_02 --cursor c1" in told, (
        "a deleted job's history pages on by its id, which a new job of the name cannot take"
    )


def test_a_name_a_new_job_has_finds_the_new_job_first_and_deleted_the_former(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [{"id": "job_03", "name": "gone"}]}
    fake_api.answers["/v1/deleted-jobs"] = {"items": [NEWER]}
    for job_id in ("job_02", "job_03"):
        fake_api.answers[f"/v1/jobs/{job_id}/executions"] = {"items": [], "next_cursor": None}

    now = main(["--endpoint", fake_api.url, "executions", "list", "gone"])
    before = main(["--endpoint", fake_api.url, "executions", "list", "--deleted", "gone"])
    capsys.readouterr()

    assert (now, before) == (0, 0)
    assert _listed(fake_api) == ["/v1/jobs/job_03/executions", "/v1/jobs/job_02/executions"], (
        "a reused name finds the new job first; --deleted the deleted one's history"
    )


def test_a_new_job_s_empty_history_points_to_the_deleted_one_that_had_its_name(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [{"id": "job_03", "name": "gone"}]}
    fake_api.answers["/v1/deleted-jobs"] = {"items": [NEWER]}
    fake_api.answers["/v1/jobs/job_03/executions"] = {"items": [], "next_cursor": None}

    code = main(["--endpoint", fake_api.url, "executions", "list", "gone"])
    told = capsys.readouterr().err

    assert code == 0
    assert "a deleted job had the name 'gone' before: takt executions list --deleted gone" in (
        told
    ), "a reused name's empty history says where the deleted job's history is"


@pytest.mark.parametrize("flags", [[], ["--deleted"]])
def test_a_name_no_job_has_nor_had_is_one_line_and_exit_1(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    fake_api.answers["/v1/jobs"] = {"items": [], "next_cursor": None}
    fake_api.answers["/v1/deleted-jobs"] = {"items": []}

    code = main(["--endpoint", fake_api.url, "executions", "list", *flags, "never"])
    told = capsys.readouterr().err

    assert code == 1, "bad input: a clear error and a non-zero exit"
    assert len(told.strip().splitlines()) == 1, told
    assert "no deleted job that had the name 'never' has history left" in told
    assert _listed(fake_api) == [], "nothing is listed for a name no job had"


def test_jobs_deleted_lists_the_former_holders_of_a_name(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/deleted-jobs"] = {"items": [NEWER, OLDER]}

    code = main(["--endpoint", fake_api.url, "-o", "json", "jobs", "deleted", "gone"])
    shown = json.loads(capsys.readouterr().out)

    assert code == 0
    assert [job["id"] for job in shown["items"]] == ["job_02", "job_01"], (
        "a deleted job's history is found by the name it had: every former holder is listed"
    )
    (asked,) = [r.target for r in fake_api.received if r.target.startswith("/v1/deleted")]
    assert asked == "/v1/deleted-jobs?name=gone"
