"""The read-only routes behind the console and `takt top`: the stats overview, a job's next runs
in plain words, and the dead-letter listing."""

from __future__ import annotations

from typing import Any

import pytest

from takt.aws import AwsClients
from takt.clock import ManualClock
from takt.config import Settings
from takt.models.ids import format_time, parse_time
from takt.models.records import ExecState
from takt.observability import MetricUnit
from takt.stats import MetricsWindow
from takt.store.executions import Transition
from takt.wiring import Services
from tests.api.harness import OTHER_TENANT, TENANT, Api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture
def window(clock: ManualClock) -> MetricsWindow:
    return MetricsWindow(clock)


@pytest.fixture
def svc(
    settings: Settings, clock: ManualClock, aws_clients: AwsClients, window: MetricsWindow
) -> Services:
    """The services with an in-memory metrics window, as `takt local` wires them."""
    return Services(settings=settings, clients=aws_clients, clock=clock, metrics_source=window)


def hourly(api: Api, name: str = "job", tenant: str = TENANT, **extra: Any) -> dict[str, Any]:
    resp = api.create(
        {"name": name, "interval": "1h", "target": "https://svc/x", **extra}, tenant=tenant
    )
    assert resp.status == 201, resp.text
    job: dict[str, Any] = resp.json
    return job


def stats(api: Api, tenant: str = TENANT) -> dict[str, Any]:
    resp = api.request("GET", "/v1/stats", tenant=tenant)
    assert resp.status == 200, resp.text
    body: dict[str, Any] = resp.json
    return body


def dead_execution(
    api: Api, clock: ManualClock, job_id: str, state: ExecState = ExecState.DEAD
) -> str:
    """A manual run of the job, moved to `state` as a worker would move it."""
    execution = api.request("POST", f"/v1/jobs/{job_id}/trigger").json
    # Two manual runs in the same millisecond of the manual clock would be one.
    clock.advance(1)
    api.svc.executions.transition(
        TENANT,
        execution["id"],
        Transition(
            expect={"state": ExecState.PENDING},
            set={"state": state, "finished_at": format_time(api.svc.clock.now())},
            remove=("open_shard", "check_at"),
        ),
    )
    api.svc.jobs.record_outcome(TENANT, job_id, execution["id"], state.value, api.svc.clock.now())
    return str(execution["id"])


# GET /v1/stats


def test_stats_of_a_new_tenant_are_all_zero(api: Api) -> None:
    body = stats(api)

    assert body["jobs"] == {"active": 0, "paused": 0, "completed": 0, "total": 0, "complete": True}
    assert body["failing_jobs"] == []
    assert (body["dead_executions"], body["failed_executions"]) == (0, 0)
    assert [lane["lane"] for lane in body["lanes"]] == ["high", "default", "low"]
    assert set(body["totals"].values()) == {0}


def test_stats_count_the_callers_jobs_per_state(api: Api) -> None:
    hourly(api, "a")
    paused = hourly(api, "b")
    api.request("PATCH", f"/v1/jobs/{paused['id']}", {"status": "paused"})
    hourly(api, "theirs", tenant=OTHER_TENANT)

    jobs = stats(api)["jobs"]

    assert (jobs["active"], jobs["paused"], jobs["total"]) == (1, 1, 2)


def test_stats_list_jobs_whose_last_run_died_or_failed(api: Api, clock: ManualClock) -> None:
    dying, failing, fine = hourly(api, "dying"), hourly(api, "failing"), hourly(api, "fine")
    dead_id = dead_execution(api, clock, dying["id"])
    dead_execution(api, clock, failing["id"], ExecState.FAILED)
    api.svc.jobs.record_outcome(
        TENANT, fine["id"], f"{fine['id']}.x", "succeeded", api.svc.clock.now()
    )

    body = stats(api)

    failing_ids = {j["id"]: j for j in body["failing_jobs"]}
    assert set(failing_ids) == {dying["id"], failing["id"]}
    assert failing_ids[dying["id"]]["last_execution_id"] == dead_id
    assert (body["dead_executions"], body["failed_executions"]) == (1, 1)


def test_stats_minutes_cover_the_last_hour_ending_with_the_current_minute(
    api: Api, clock: ManualClock
) -> None:
    minutes = stats(api)["minutes"]

    assert len(minutes) == 60
    assert parse_time(minutes[-1]["minute"]) == clock.now().replace(second=0, microsecond=0)


def test_stats_minutes_and_totals_come_from_the_metrics(
    api: Api, window: MetricsWindow, clock: ManualClock
) -> None:
    for lag in (10, 20, 1000):
        window.record("ScheduleLag", MetricUnit.Milliseconds, lag)
        window.record("Succeeded", MetricUnit.Count, 1)
    window.record("LeaseExpired", MetricUnit.Count, 2)
    clock.advance(60)
    window.record("Dead", MetricUnit.Count, 1)

    body = stats(api)

    done, now = body["minutes"][-2], body["minutes"][-1]
    assert (done["succeeded"], done["lag_max_ms"]) == (3, 1000)
    assert done["lag_p50_ms"] == pytest.approx(20, rel=0.02)
    assert done["lag_p99_ms"] == pytest.approx(1000, rel=0.02)
    assert (now["dead"], now["lag_p99_ms"]) == (1, None)
    assert (body["totals"]["succeeded"], body["totals"]["lease_expired"]) == (3, 2)


def test_stats_say_since_when_the_hours_counts_count_after_a_restart(
    api: Api, window: MetricsWindow, clock: ManualClock
) -> None:
    began = window.since()
    clock.advance(300)
    window.record("Dead", MetricUnit.Count, 1)

    restarted = stats(api)
    clock.advance(3600)
    settled = stats(api)

    assert began is not None
    assert restarted["metrics_since"] == format_time(began), (
        "the hour's counts say what window they count: a takt local restarted 5 minutes ago "
        "counts from then, not from an hour ago (the minutes before read as unknown, not zero)"
    )
    assert settled["metrics_since"] == settled["minutes"][0]["minute"]
    assert restarted["totals"]["dead"] == sum(m["dead"] for m in restarted["minutes"]) == 1


def test_stats_show_messages_waiting_in_a_lane(api: Api) -> None:
    job = hourly(api, priority="high")
    api.request("POST", f"/v1/jobs/{job['id']}/trigger")

    lanes = {lane["lane"]: lane for lane in stats(api)["lanes"]}

    assert lanes["high"]["waiting"] == 1
    assert lanes["default"]["waiting"] == 0


# GET /v1/jobs/{id}/preview


def test_preview_gives_the_cron_in_words_and_the_next_runs_in_its_zone(api: Api) -> None:
    job = api.created_job(
        {"schedule": "0 6 * * 1-5", "time_zone": "Europe/Berlin", "target": "https://svc/x"}
    )

    resp = api.request("GET", f"/v1/jobs/{job['id']}/preview")

    assert resp.status == 200, resp.text
    body = resp.json
    assert body["description"] == "at 06:00 on Monday to Friday (Europe/Berlin)"
    # The fixture's clock stands at Monday 2026-03-02T12:00Z.
    assert [run["at"] for run in body["next_runs"]] == [
        "2026-03-03T05:00:00Z",
        "2026-03-04T05:00:00Z",
        "2026-03-05T05:00:00Z",
        "2026-03-06T05:00:00Z",
        "2026-03-09T05:00:00Z",
    ]
    assert body["next_runs"][0]["local"] == "2026-03-03T06:00:00+01:00"


def test_preview_count_asks_for_more_or_fewer_runs(api: Api) -> None:
    job = hourly(api)

    resp = api.request("GET", f"/v1/jobs/{job['id']}/preview?count=2")

    assert [run["at"] for run in resp.json["next_runs"]] == [
        "2026-03-02T13:00:00Z",
        "2026-03-02T14:00:00Z",
    ]
    assert resp.json["description"] == "every 1 hour from 2026-03-02T12:00:00Z"


@pytest.mark.parametrize("count", ["0", "101", "many"])
def test_preview_count_out_of_range_is_400(api: Api, count: str) -> None:
    job = hourly(api)

    resp = api.request("GET", f"/v1/jobs/{job['id']}/preview?count={count}")

    assert resp.status == 400
    assert resp.json["errors"][0]["field"] == "count"


def test_preview_of_a_completed_job_has_no_runs(api: Api) -> None:
    job = api.created_job({"run_at": "2026-03-02T11:00:00Z", "target": "https://svc/x"})
    record = api.svc.jobs.get(TENANT, job["id"])
    api.svc.jobs.advance(record, parse_time(job["next_run_time"]), None)

    body = api.request("GET", f"/v1/jobs/{job['id']}/preview").json

    assert (body["status"], body["next_runs"]) == ("completed", [])
    assert body["description"] == "once at 2026-03-02T11:00:00Z"


def test_preview_of_another_tenants_job_is_404(api: Api) -> None:
    job = hourly(api, tenant=OTHER_TENANT)

    assert api.request("GET", f"/v1/jobs/{job['id']}/preview").status == 404


# GET /v1/executions?state=


def test_dead_letter_listing_has_the_callers_dead_executions(api: Api, clock: ManualClock) -> None:
    job = hourly(api)
    dead_id = dead_execution(api, clock, job["id"])
    dead_execution(api, clock, job["id"], ExecState.FAILED)

    dead = api.request("GET", "/v1/executions?state=dead")
    failed = api.request("GET", "/v1/executions?state=failed")
    theirs = api.request("GET", "/v1/executions?state=dead", tenant=OTHER_TENANT)

    assert dead.status == 200, dead.text
    assert [e["id"] for e in dead.json["items"]] == [dead_id]
    assert [e["state"] for e in failed.json["items"]] == ["failed"]
    assert theirs.json["items"] == []


def test_a_retried_execution_leaves_the_dead_letter_listing(api: Api, clock: ManualClock) -> None:
    dead_id = dead_execution(api, clock, hourly(api)["id"])

    assert api.request("POST", f"/v1/executions/{dead_id}/retry").status == 202

    assert api.request("GET", "/v1/executions?state=dead").json["items"] == []


@pytest.mark.parametrize(
    "query", ["", "?state=running", "?state=dead&limit=0", "?state=dead&cursor=bm9wZQ"]
)
def test_dead_letter_listing_refuses_a_bad_query_with_400(api: Api, query: str) -> None:
    resp = api.request("GET", f"/v1/executions{query}")

    assert resp.status == 400
    assert resp.json["errors"][0]["field"] in {"state", "limit", "cursor"}
