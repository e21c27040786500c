"""The calendar routes, and `takt calendars` through the CLI's own client against them."""

from __future__ import annotations

import json

import pytest

from takt_cli.commands.main import main
from tests.api.harness import PROBLEM_JSON, Api, store_snapshot
from tests.api.served import served

NIGHTS = {"time_zone": "Europe/Berlin", "daily": [{"start": "22:00", "end": "06:00"}]}


def test_put_creates_then_replaces_and_get_list_delete_follow(api: Api) -> None:
    missing = api.request("PUT", "/v1/calendars/nights", NIGHTS)
    first = api.request("POST", "/v1/calendars", {**NIGHTS, "name": "nights"})
    twice = api.request("POST", "/v1/calendars", {**NIGHTS, "name": "nights"})
    second = api.request("PUT", "/v1/calendars/nights", {**NIGHTS, "holidays": ["2026-12-25"]})

    assert (missing.status, twice.status) == (404, 409)
    assert (first.status, first.json["version"]) == (201, 1)
    assert (second.status, second.json["version"], second.json["holidays"]) == (
        200,
        2,
        ["2026-12-25"],
    )
    listed = api.request("GET", "/v1/calendars").json["items"]
    assert [c["name"] for c in listed] == ["nights"]
    assert api.request("GET", "/v1/calendars/nights").json["daily"] == [
        {"start": "22:00:00", "end": "06:00:00", "days": None}
    ]
    assert api.request("DELETE", "/v1/calendars/nights").status == 204
    assert api.request("GET", "/v1/calendars/nights").status == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {"windows": [{"start": "2026-12-02T00:00:00Z", "end": "2026-12-01T00:00:00Z"}]},
            "windows",
        ),
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"holidays": ["christmas"]}, "holidays"),
        ({"daily": [{"start": "25:00", "end": "01:00"}]}, "daily"),
    ],
)
def test_a_bad_calendar_is_refused_naming_the_field_and_stores_nothing(
    api: Api, body: dict[str, object], field: str
) -> None:
    before = store_snapshot(api.svc)
    resp = api.request("POST", "/v1/calendars", {**body, "name": "bad"})
    assert (resp.status, resp.content_type) == (400, PROBLEM_JSON)
    assert any(e["field"].startswith(field) for e in resp.json["errors"]), resp.json
    assert store_snapshot(api.svc) == before


def test_a_job_may_name_only_calendars_that_exist(api: Api) -> None:
    job = {"interval": "1h", "target": "https://svc/hook", "calendars": ["nights"]}
    refused = api.create(job)
    assert refused.status == 400
    assert [e["field"] for e in refused.json["errors"]] == ["calendars"]
    api.request("POST", "/v1/calendars", {**NIGHTS, "name": "nights"})
    assert api.create(job).json["calendars"] == ["nights"]


def test_takt_calendars_put_from_flags(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    with served(api) as endpoint:
        code = main(
            [
                "--endpoint", endpoint, "-o", "json", "calendars", "put", "holidays",
                "--tz", "America/New_York", "--holiday", "2026-12-25", "--daily", "01:00-03:00",
            ]
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    stored = json.loads(out)
    assert (stored["time_zone"], stored["holidays"]) == ("America/New_York", ["2026-12-25"])
    assert api.request("GET", "/v1/calendars/holidays").json["daily"][0]["start"] == "01:00:00"
