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


def test_a_deleted_job_s_history_is_found_by_the_id_its_delete_printed(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs/job_01"] = {}
    fake_api.answers["/v1/jobs"] = {"items": [], "next_cursor": None}

    main(["--endpoint", fake_api.url, "-o", "table", "jobs", "delete", "job_01"])
    told = capsys.readouterr().err
    code = main(["--endpoint", fake_api.url, "executions", "list", "gone"])
    refused = capsys.readouterr().err

    assert "takt executions list job_01" in told, "a delete says how its history stays reachable"
    assert code != 0
    assert "a deleted job's history is listed by its id" in refused, (
        "a name no job has any more says how to reach a deleted job's history"
    )
