"""Jobs through the api handler: create, idempotency, read, list, change, delete, tenancy."""

from __future__ import annotations

from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.handler import handler
from takt.clock import ManualClock
from takt_cli.local.events import LocalContext, LocalIdentity, http_api_event
from tests.api.harness import OTHER_TENANT, PROBLEM_JSON, Api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

# The example body of the seed, as written there.
SEED_BODY: dict[str, Any] = {
    "schedule": "0 6 * * *",
    "target": "https://svc/report",
    "payload": {"report": "daily-sales", "format": "pdf"},
    "retry": {"max_attempts": 5, "backoff": "exponential"},
    "timeout_sec": 300,
    "idempotency_key": "daily-sales-2026",
}


def interval_job(name: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"interval": "1h", "target": "https://svc/hook", **extra}
    if name is not None:
        body["name"] = name
    return body


def test_create_answers_201_with_etag_location_and_utc_next_run_time(api: Api) -> None:
    resp = api.create({"schedule": "0 6 * * *", "target": "https://svc/report"})

    assert resp.status == 201
    job = resp.json
    assert job["id"].startswith("job_")
    assert job["status"] == "active"
    assert resp.headers["etag"] == f'"{job["version"]}"'
    assert resp.headers["location"] == f"/v1/jobs/{job['id']}"
    # The fixture's clock stands at 2026-03-02T12:00Z: the next 06:00 UTC is the next morning.
    assert job["next_run_time"] == "2026-03-03T06:00:00Z"


def test_cron_next_run_time_is_computed_in_the_job_time_zone_and_given_in_utc(api: Api) -> None:
    job = api.created_job(
        {"schedule": "0 6 * * *", "time_zone": "Europe/Berlin", "target": "https://svc/x"}
    )

    assert job["time_zone"] == "Europe/Berlin"
    assert job["next_run_time"] == "2026-03-03T05:00:00Z"


def test_seed_example_body_is_accepted_as_written(api: Api) -> None:
    resp = api.create(SEED_BODY)

    assert resp.status == 201, resp.text
    job = resp.json
    assert job["schedule"] == "0 6 * * *"
    assert job["payload"] == SEED_BODY["payload"]
    assert job["retry"]["max_attempts"] == 5
    assert job["retry"]["backoff"] == "exponential"
    assert job["timeout_sec"] == 300
    assert job["idempotency_key"] == "daily-sales-2026"


def test_same_idempotency_key_in_body_and_same_body_returns_first_job_with_200(api: Api) -> None:
    first = api.create(SEED_BODY)
    second = api.create(SEED_BODY)

    assert (first.status, second.status) == (201, 200)
    assert second.json["id"] == first.json["id"]
    assert second.headers["etag"] == first.headers["etag"]


def test_same_idempotency_key_header_and_same_body_returns_first_job(api: Api) -> None:
    body = interval_job("keyed")
    first = api.create(body, headers={"Idempotency-Key": "header-key-1"})
    second = api.create(body, headers={"Idempotency-Key": "header-key-1"})

    assert (first.status, second.status) == (201, 200)
    assert second.json["id"] == first.json["id"]
    listed = api.request("GET", "/v1/jobs").json["items"]
    assert [j["id"] for j in listed] == [first.json["id"]]


def test_same_idempotency_key_with_another_body_is_422_problem(api: Api) -> None:
    api.create(interval_job("a"), headers={"Idempotency-Key": "k-422"})

    resp = api.create(interval_job("b"), headers={"Idempotency-Key": "k-422"})

    assert resp.status == 422
    assert resp.content_type == PROBLEM_JSON
    assert resp.json["status"] == 422
    assert [e["field"] for e in resp.json["errors"]] == ["idempotency_key"]


def test_same_idempotency_key_in_body_with_another_body_is_422(api: Api) -> None:
    api.create(SEED_BODY)

    resp = api.create({**SEED_BODY, "timeout_sec": 60})

    assert resp.status == 422
    assert resp.content_type == PROBLEM_JSON


def test_idempotency_keys_are_per_tenant(api: Api) -> None:
    mine = api.create(SEED_BODY)
    theirs = api.create(SEED_BODY, tenant=OTHER_TENANT)

    assert (mine.status, theirs.status) == (201, 201)
    assert theirs.json["id"] != mine.json["id"]


def test_get_returns_the_stored_job_with_its_etag(api: Api) -> None:
    created = api.create(interval_job("get-me"))

    resp = api.request("GET", f"/v1/jobs/{created.json['id']}")

    assert resp.status == 200
    assert resp.json == created.json
    assert resp.headers["etag"] == created.headers["etag"]


def test_get_of_an_unknown_job_is_404_problem(api: Api) -> None:
    resp = api.request("GET", "/v1/jobs/job_doesnotexist")

    assert resp.status == 404
    assert resp.content_type == PROBLEM_JSON
    assert resp.json["status"] == 404


def test_another_tenant_cannot_see_change_run_or_delete_a_job(api: Api) -> None:
    job_id = api.created_job(interval_job("private"))["id"]

    answers = [
        api.request("GET", f"/v1/jobs/{job_id}", tenant=OTHER_TENANT).status,
        api.request(
            "PATCH", f"/v1/jobs/{job_id}", {"status": "paused"}, tenant=OTHER_TENANT
        ).status,
        api.request("POST", f"/v1/jobs/{job_id}/trigger", tenant=OTHER_TENANT).status,
        api.request("GET", f"/v1/jobs/{job_id}/executions", tenant=OTHER_TENANT).status,
        api.request("DELETE", f"/v1/jobs/{job_id}", tenant=OTHER_TENANT).status,
    ]

    assert answers == [404, 404, 404, 404, 404]
    assert api.request("GET", f"/v1/jobs/{job_id}").json["status"] == "active"


def test_another_tenant_list_does_not_show_my_jobs(api: Api) -> None:
    api.created_job(interval_job("mine"))

    page = api.request("GET", "/v1/jobs", tenant=OTHER_TENANT).json

    assert page["items"] == []


def test_request_without_caller_identity_is_401(api: Api) -> None:
    event = http_api_event("GET", "/v1/jobs", {}, b"", LocalIdentity("ignored"))
    event["requestContext"]["authorizer"] = {}
    result = handler(event, cast(LambdaContext, LocalContext(function_name="takt-api")))

    assert result["statusCode"] == 401
    assert result["headers"]["Content-Type"] == PROBLEM_JSON


def test_list_filters_by_name_prefix(api: Api) -> None:
    a = api.created_job(interval_job("report-a"))
    b = api.created_job(interval_job("report-b"))
    api.created_job(interval_job("cleanup"))

    page = api.request("GET", "/v1/jobs?name=report-").json

    assert [j["id"] for j in page["items"]] == [a["id"], b["id"]]


def test_list_filters_by_status(api: Api) -> None:
    api.created_job(interval_job("running"))
    paused = api.created_job(interval_job("resting"))
    api.request("PATCH", f"/v1/jobs/{paused['id']}", {"status": "paused"})

    page = api.request("GET", "/v1/jobs?status=paused").json

    assert [j["id"] for j in page["items"]] == [paused["id"]]


def test_list_pages_through_every_job_once_with_the_cursor(api: Api) -> None:
    created = [api.created_job(interval_job(f"job-{i}"))["id"] for i in range(5)]

    seen: list[str] = []
    pages = 0
    path = "/v1/jobs?limit=2"
    while True:
        page = api.request("GET", path).json
        pages += 1
        seen.extend(j["id"] for j in page["items"])
        if not page["next_cursor"]:
            break
        path = f"/v1/jobs?limit=2&cursor={page['next_cursor']}"

    assert seen == created
    assert pages >= 3


def test_patch_pause_sets_status_paused_and_bumps_the_etag(api: Api) -> None:
    created = api.create(interval_job("pause-me"))

    resp = api.request("PATCH", f"/v1/jobs/{created.json['id']}", {"status": "paused"})

    assert resp.status == 200
    assert resp.json["status"] == "paused"
    assert resp.json["version"] == created.json["version"] + 1
    assert resp.headers["etag"] == f'"{created.json["version"] + 1}"'


def test_patch_resume_makes_a_paused_job_active_with_a_next_run(
    api: Api, clock: ManualClock
) -> None:
    job_id = api.created_job({"schedule": "*/5 * * * *", "target": "https://svc/x"})["id"]
    api.request("PATCH", f"/v1/jobs/{job_id}", {"status": "paused"})
    clock.advance(3600)

    resp = api.request("PATCH", f"/v1/jobs/{job_id}", {"status": "active"})

    assert resp.status == 200
    assert resp.json["status"] == "active"
    # Resumed at 13:00: the next occurrence is from now on, not the one missed while paused.
    assert resp.json["next_run_time"] == "2026-03-02T13:05:00Z"


def test_patch_schedule_change_recomputes_next_run_time(api: Api) -> None:
    job_id = api.created_job({"schedule": "0 6 * * *", "target": "https://svc/x"})["id"]

    resp = api.request("PATCH", f"/v1/jobs/{job_id}", {"schedule": "30 12 * * *"})

    assert resp.status == 200
    assert resp.json["schedule"] == "30 12 * * *"
    assert resp.json["next_run_time"] == "2026-03-02T12:30:00Z"


def test_patch_from_cron_to_interval_clears_the_cron(api: Api) -> None:
    job_id = api.created_job({"schedule": "0 6 * * *", "target": "https://svc/x"})["id"]

    resp = api.request("PATCH", f"/v1/jobs/{job_id}", {"interval": "15m"})

    assert resp.status == 200
    assert (resp.json["schedule"], resp.json["interval"]) == (None, "15m")
    assert resp.json["next_run_time"] == "2026-03-02T12:15:00Z"


def test_patch_target_payload_retry_and_timeout(api: Api) -> None:
    job_id = api.created_job(interval_job("change-me"))["id"]
    change = {
        "target": "https://svc/other",
        "payload": {"v": 2},
        "retry": {"max_attempts": 3, "backoff": "fixed"},
        "timeout_sec": 60,
    }

    resp = api.request("PATCH", f"/v1/jobs/{job_id}", change)

    assert resp.status == 200
    stored = api.request("GET", f"/v1/jobs/{job_id}").json
    assert stored["target"] == "https://svc/other"
    assert stored["payload"] == {"v": 2}
    assert (stored["retry"]["max_attempts"], stored["retry"]["backoff"]) == (3, "fixed")
    assert stored["timeout_sec"] == 60


def test_patch_with_current_if_match_succeeds(api: Api) -> None:
    created = api.create(interval_job("etag"))

    resp = api.request(
        "PATCH",
        f"/v1/jobs/{created.json['id']}",
        {"name": "etag-2"},
        headers={"If-Match": created.headers["etag"]},
    )

    assert resp.status == 200
    assert resp.json["name"] == "etag-2"


def test_patch_with_if_match_star_matches_any_version(api: Api) -> None:
    job_id = api.created_job(interval_job("star"))["id"]
    api.request("PATCH", f"/v1/jobs/{job_id}", {"name": "moved"})

    resp = api.request("PATCH", f"/v1/jobs/{job_id}", {"name": "mine"}, headers={"If-Match": "*"})

    assert resp.status == 200
    assert resp.json["name"] == "mine"


def test_create_accepts_json_with_a_charset_parameter(api: Api) -> None:
    resp = api.create(
        interval_job("charset"), headers={"Content-Type": "application/json; charset=utf-8"}
    )

    assert resp.status == 201


def test_patch_with_stale_if_match_is_412_and_changes_nothing(api: Api) -> None:
    created = api.create(interval_job("etag"))
    job_id = created.json["id"]
    api.request("PATCH", f"/v1/jobs/{job_id}", {"name": "someone-else"})

    resp = api.request(
        "PATCH",
        f"/v1/jobs/{job_id}",
        {"name": "mine"},
        headers={"If-Match": created.headers["etag"]},
    )

    assert resp.status == 412
    assert resp.content_type == PROBLEM_JSON
    assert api.request("GET", f"/v1/jobs/{job_id}").json["name"] == "someone-else"


def test_delete_answers_204_then_the_job_is_404(api: Api) -> None:
    job_id = api.created_job(interval_job("delete-me"))["id"]

    deleted = api.request("DELETE", f"/v1/jobs/{job_id}")

    assert deleted.status == 204
    assert api.request("GET", f"/v1/jobs/{job_id}").status == 404
    assert api.request("DELETE", f"/v1/jobs/{job_id}").status == 404


def test_unknown_route_is_404_problem(api: Api) -> None:
    resp = api.request("GET", "/v1/nothing-here")

    assert resp.status == 404
    assert resp.content_type == PROBLEM_JSON
