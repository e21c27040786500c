"""Backfills through the API: every occurrence of a range runs once, as a backfill, at most
`max_parallel` at a time; repeating it runs nothing again; cancelling stops it; across DST the
occurrences are the ones croniter gives."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from takt.executions.lifecycle import Lifecycle
from takt.models.ids import format_time, parse_time
from takt.models.records import ExecState
from takt.store.executions import Transition
from takt_cli.commands.main import main
from tests.api.harness import TENANT, Api
from tests.api.served import served

JOB = {"schedule": "30 1 * * *", "time_zone": "America/New_York", "target": "https://svc/hook"}
# 1 November 2026: New York repeats 1:00-2:00, and the fixed-time job runs once (the first time).
FROM, TO = "2026-10-30T00:00:00Z", "2026-11-03T00:00:00Z"


def _oracle() -> list[datetime]:
    """croniter's instants, each local wall time once: croniter runs a fixed-time job at both
    passes of a repeated hour, Vixie's rule (takt's) only at the first."""
    zone = ZoneInfo("America/New_York")
    it = croniter("30 1 * * *", parse_time(FROM).astimezone(zone))
    found: dict[datetime, datetime] = {}
    while (t := it.get_next(datetime)).astimezone(UTC) <= parse_time(TO):
        found.setdefault(t.replace(tzinfo=None), t.astimezone(UTC))
    return list(found.values())


def _executions(api: Api, job_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.request("GET", f"/v1/jobs/{job_id}/executions").json["items"]
    return sorted(items, key=lambda e: e["scheduled_time"])


def _finish(api: Api, exec_id: str) -> None:
    """Complete an execution as a worker would, and let what follows its end run."""
    svc = api.svc
    record = svc.executions.get(TENANT, exec_id)
    done = svc.executions.transition(
        TENANT,
        exec_id,
        Transition(
            expect={"state": record.state, "attempt": record.attempt},
            set={"state": ExecState.SUCCEEDED, "finished_at": format_time(svc.clock.now())},
            remove=("open_shard", "check_at"),
        ),
    )
    Lifecycle(svc.settings, svc.jobs, svc.executions, svc.lanes).ended(
        done, ExecState.SUCCEEDED, svc.clock.now()
    )


def test_a_backfill_runs_every_occurrence_of_the_range_max_parallel_at_a_time(api: Api) -> None:
    job = api.created_job(JOB)
    started = api.request(
        "POST", f"/v1/jobs/{job['id']}/backfill", {"from": FROM, "to": TO, "max_parallel": 2}
    )

    assert started.status == 202, started.text
    backfill = started.json
    assert (backfill["from"], backfill["to"]) == (FROM, TO)
    expected = _oracle()
    assert (backfill["total"], backfill["running"], backfill["state"]) == (
        len(expected),
        2,
        "running",
    )
    while running := [e for e in _executions(api, job["id"]) if e["state"] == "pending"]:
        assert len(running) <= 2
        _finish(api, running[0]["id"])

    history = _executions(api, job["id"])
    assert [parse_time(e["scheduled_time"]) for e in history] == expected
    assert {(e["trigger"], e["state"]) for e in history} == {("backfill", "succeeded")}
    done = api.request("GET", f"/v1/jobs/{job['id']}/backfills/{backfill['id']}").json
    assert (done["state"], done["started"], done["existing"], done["running"]) == (
        "done",
        len(expected),
        0,
        0,
    )


def test_repeating_a_backfill_runs_nothing_again(api: Api) -> None:
    job = api.created_job(JOB)
    body = {"from": FROM, "to": TO, "max_parallel": 20}
    first = api.request("POST", f"/v1/jobs/{job['id']}/backfill", body).json
    for e in _executions(api, job["id"]):
        _finish(api, e["id"])

    again = api.request("POST", f"/v1/jobs/{job['id']}/backfill", body).json

    assert first["started"] == len(_oracle())
    assert (again["started"], again["existing"], again["state"]) == (0, len(_oracle()), "done")
    assert len(_executions(api, job["id"])) == len(_oracle())
    listed = api.request("GET", f"/v1/jobs/{job['id']}/backfills").json["items"]
    assert [b["id"] for b in listed] == [again["id"], first["id"]]


def test_cancelling_a_backfill_stops_its_open_runs_and_starts_no_more(api: Api) -> None:
    job = api.created_job(JOB)
    backfill = api.request(
        "POST", f"/v1/jobs/{job['id']}/backfill", {"from": FROM, "to": TO, "max_parallel": 1}
    ).json

    cancelled = api.request("DELETE", f"/v1/jobs/{job['id']}/backfills/{backfill['id']}")

    assert (cancelled.status, cancelled.json["state"]) == (200, "cancelled")
    # Its one run was still pending, so the cancel ended it: nothing is left running.
    assert cancelled.json["running"] == 0
    history = _executions(api, job["id"])
    assert [e["state"] for e in history] == ["cancelled"]
    assert (
        api.request("DELETE", f"/v1/jobs/{job['id']}/backfills/{backfill['id']}").json["state"]
        == "cancelled"
    )


def test_a_backfill_is_bounded_and_its_range_checked(api: Api) -> None:
    job = api.created_job({**JOB, "schedule": "* * * * *"})
    url = f"/v1/jobs/{job['id']}/backfill"
    too_big = api.request(
        "POST", url, {"from": "2026-10-01T00:00:00Z", "to": "2026-10-02T00:00:00Z"}
    )
    backwards = api.request("POST", url, {"from": TO, "to": FROM})
    too_parallel = api.request("POST", url, {"from": FROM, "to": TO, "max_parallel": 21})

    assert [e["field"] for e in too_big.json["errors"]] == ["to"]
    assert [e["field"] for e in backwards.json["errors"]] == ["to"]
    assert too_parallel.status == 400
    assert api.request("GET", f"/v1/jobs/{job['id']}/backfills").json["items"] == []


def test_jobs_get_shows_jitter_a_pause_calendars_and_backfills_in_progress(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    api.request("POST", "/v1/calendars", {"name": "freeze", "holidays": ["2026-12-25"]})
    job = api.created_job(
        {
            **JOB,
            "jitter": "15m",
            "pause_until": "2099-01-01T00:00:00Z",
            "calendars": ["freeze"],
        }
    )
    with served(api) as endpoint:
        started = main(
            ["--endpoint", endpoint, "-o", "json", "jobs", "backfill", job["id"],
             "--from", FROM, "--to", TO]
        )  # fmt: skip
        backfill = json.loads(capsys.readouterr().out)
        shown = main(["--endpoint", endpoint, "jobs", "get", job["id"]])
    out = capsys.readouterr().out

    assert (started, shown) == (0, 0)
    assert "jitter:    each run fires within 15m after its time" in out
    assert "paused until 2099-01-01T00:00:00Z" in out
    assert "calendars: freeze" in out
    assert f"backfill:  {backfill['id']} {FROM} to {TO}: 0 of 4 done, 1 running" in out
    assert "fires 2099-01-" in out


# Berlin, 02:30 every day: on 29 March 2026 the clock jumps 02:00 CET -> 03:00 CEST at 01:00 UTC,
# so 02:30 does not exist; on 25 October it falls back 03:00 CEST -> 02:00 CET at 01:00 UTC, so
# 02:30 comes twice (00:30 and 01:30 UTC). Written out from the tz database's offsets.
BERLIN = {"schedule": "30 2 * * *", "time_zone": "Europe/Berlin", "target": "https://svc/hook"}


@pytest.mark.parametrize(
    ("dst", "window", "expected"),
    [
        (
            {"gap": "run", "overlap": "once"},
            ("2026-03-27T00:00:00Z", "2026-03-31T00:00:00Z"),
            [
                "2026-03-27T01:30:00Z",
                "2026-03-28T01:30:00Z",
                "2026-03-29T01:00:00Z",
                "2026-03-30T00:30:00Z",
            ],
        ),
        (
            {"gap": "skip", "overlap": "once"},
            ("2026-03-27T00:00:00Z", "2026-03-31T00:00:00Z"),
            ["2026-03-27T01:30:00Z", "2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"],
        ),
        (
            {"gap": "run", "overlap": "twice"},
            ("2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z"),
            [
                "2026-10-24T00:30:00Z",
                "2026-10-25T00:30:00Z",
                "2026-10-25T01:30:00Z",
                "2026-10-26T01:30:00Z",
            ],
        ),
    ],
)
def test_a_backfill_across_berlins_clock_changes_runs_the_jobs_own_dst_rule(
    api: Api, dst: dict[str, str], window: tuple[str, str], expected: list[str]
) -> None:
    job = api.created_job({**BERLIN, "dst": dst})
    started = api.request(
        "POST",
        f"/v1/jobs/{job['id']}/backfill",
        {"from": window[0], "to": window[1], "max_parallel": 10},
    )

    assert started.status == 202, started.text
    assert started.json["total"] == len(expected)
    history = _executions(api, job["id"])
    assert [e["scheduled_time"] for e in history] == expected
    assert {e["trigger"] for e in history} == {"backfill"}


def test_takt_jobs_backfill_and_backfills_take_the_jobs_name(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    """As every other job command does: `takt jobs backfill nightly ...`, not only the id."""
    job = api.created_job({**JOB, "name": "nightly"})
    with served(api) as endpoint:
        cli = ["--endpoint", endpoint, "-o", "json", "jobs"]
        started = main([*cli, "backfill", "nightly", "--from", FROM, "--to", TO])
        backfill = json.loads(capsys.readouterr().out)
        cancelled = main([*cli, "backfills", "nightly", "--cancel", backfill["id"]])
        stopped = json.loads(capsys.readouterr().out)

    assert (started, cancelled) == (0, 0)
    assert (backfill["job_id"], stopped["state"]) == (job["id"], "cancelled")
