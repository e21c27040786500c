"""Bad input: each answer is a problem+json 4xx naming the field, and the store is unchanged.

Every case compares every item of the tables and every lane's message count before and
after the refused request (DESIGN invariant 7), with one job already stored so "unchanged" is
tested against a store that has something in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.api.harness import PROBLEM_JSON, Api, ApiResponse, store_snapshot

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

TARGET = "https://svc/hook"
PAYLOAD_LIMIT = 256 * 1024


@dataclass(frozen=True)
class Case:
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 400
    field: str | None = None


def cron(expr: str, **extra: Any) -> dict[str, Any]:
    return {"schedule": expr, "target": TARGET, **extra}


def every(interval: str, **extra: Any) -> dict[str, Any]:
    return {"interval": interval, "target": TARGET, **extra}


KEY = {"Idempotency-Key": "bad-input-key"}

CREATE_CASES: dict[str, Case] = {
    "invalid cron": Case(cron("every tuesday"), field="schedule"),
    "cron with a bad field value": Case(cron("61 * * * *"), field="schedule"),
    "impossible cron": Case(cron("0 0 30 2 *"), field="schedule"),
    "impossible cron with idempotency key": Case(cron("0 0 30 2 *"), headers=KEY, field="schedule"),
    "unknown time zone": Case(cron("0 6 * * *", time_zone="Mars/Olympus_Mons"), field="time_zone"),
    "schedule and run_at": Case(cron("0 6 * * *", run_at="2026-03-03T00:00:00Z"), field="run_at"),
    "schedule and interval": Case(cron("0 6 * * *", interval="1h"), field="interval"),
    "neither schedule, run_at nor interval": Case({"target": TARGET}, field="schedule"),
    "zero interval": Case(every("0s"), field="interval"),
    "negative interval": Case(every("-5m"), field="interval"),
    "max_attempts 0": Case(every("1h", retry={"max_attempts": 0}), field="retry.max_attempts"),
    "max_attempts 101": Case(every("1h", retry={"max_attempts": 101}), field="retry.max_attempts"),
    "timeout -1": Case(every("1h", timeout_sec=-1), field="timeout_sec"),
    "timeout 86401": Case(every("1h", timeout_sec=86401), field="timeout_sec"),
    "ftp target": Case({"interval": "1h", "target": "ftp://x"}, field="target"),
    "file target": Case({"interval": "1h", "target": "file:///etc/passwd"}, field="target"),
    "payload over 256 KB": Case(
        every("1h", payload="x" * (PAYLOAD_LIMIT + 1)), status=413, field="payload"
    ),
    "payload over 256 KB with idempotency key": Case(
        every("1h", payload="x" * (PAYLOAD_LIMIT + 1)), headers=KEY, status=413, field="payload"
    ),
    "request body far over the limit": Case(
        every("1h", payload="x" * (2 * PAYLOAD_LIMIT)), status=413, field="body"
    ),
    "malformed JSON": Case(raw=b'{"interval": "1h", "target": ', field="body"),
    "unknown field": Case(every("1h", colour="blue"), field="colour"),
    "tenant in the body": Case(every("1h", tenant_id="someone-else"), field="tenant_id"),
    "text/plain content type": Case(
        every("1h"), headers={"Content-Type": "text/plain"}, status=415, field="Content-Type"
    ),
    "form content type": Case(
        raw=b"interval=1h&target=https%3A%2F%2Fsvc",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        status=415,
        field="Content-Type",
    ),
    "no schedule before end_at, with idempotency key": Case(
        cron(
            "0 6 * * *",
            start_at="2026-03-02T12:00:00Z",
            end_at="2026-03-02T13:00:00Z",
        ),
        headers=KEY,
        field="end_at",
    ),
    "end_at before start_at": Case(
        every("1h", start_at="2026-03-03T00:00:00Z", end_at="2026-03-02T00:00:00Z"),
        field="end_at",
    ),
    "unknown priority lane": Case(every("1h", priority="urgent"), field="priority"),
    "run_at without offset": Case(
        {"run_at": "2026-03-03T00:00:00", "target": TARGET}, field="run_at"
    ),
}


@pytest.fixture
def stored_job(api: Api) -> dict[str, Any]:
    return api.created_job(
        {"schedule": "0 6 * * *", "target": TARGET, "payload": {"keep": True}, "name": "kept"}
    )


def assert_problem(resp: ApiResponse, status: int, field: str | None) -> None:
    assert resp.status == status, resp.text
    assert resp.content_type == PROBLEM_JSON
    problem = resp.json
    assert problem["status"] == status
    assert problem["title"]
    assert problem["detail"]
    if field is not None:
        assert field in [e["field"] for e in problem["errors"]], problem


@pytest.mark.parametrize("case", CREATE_CASES.values(), ids=CREATE_CASES.keys())
def test_bad_create_is_a_problem_naming_the_field_and_changes_nothing(
    api: Api, stored_job: dict[str, Any], case: Case
) -> None:
    before = store_snapshot(api.svc)

    resp = api.request("POST", "/v1/jobs", case.body, raw=case.raw, headers=case.headers)

    assert_problem(resp, case.status, case.field)
    assert store_snapshot(api.svc) == before


def test_refused_create_does_not_burn_its_idempotency_key(api: Api) -> None:
    bad = every("1h", payload="x" * (PAYLOAD_LIMIT + 1))
    good = every("1h", payload="small")

    refused = api.request("POST", "/v1/jobs", bad, headers=KEY)
    accepted = api.request("POST", "/v1/jobs", good, headers=KEY)

    assert (refused.status, accepted.status) == (413, 201)


def test_malformed_json_problem_says_malformed_json(api: Api) -> None:
    resp = api.request("POST", "/v1/jobs", raw=b"{nope")

    assert resp.json["errors"] == [{"field": "body", "message": "malformed JSON"}]


PATCH_CASES: dict[str, Case] = {
    "invalid cron": Case({"schedule": "every tuesday"}, field="schedule"),
    "impossible cron": Case({"schedule": "0 0 30 2 *"}, field="schedule"),
    "unknown time zone": Case({"time_zone": "Nowhere/Land"}, field="time_zone"),
    "two schedules": Case({"schedule": "0 6 * * *", "interval": "1h"}, field="interval"),
    "zero interval": Case({"interval": "0s"}, field="interval"),
    "max_attempts 101": Case({"retry": {"max_attempts": 101}}, field="retry.max_attempts"),
    "timeout 86401": Case({"timeout_sec": 86401}, field="timeout_sec"),
    "non-http target": Case({"target": "ftp://x"}, field="target"),
    "payload over 256 KB": Case({"payload": "x" * (PAYLOAD_LIMIT + 1)}, status=413),
    "unknown field": Case({"colour": "blue"}, field="colour"),
    "status completed": Case({"status": "completed"}, field="status"),
    "malformed JSON": Case(raw=b"{", field="body"),
    "text/plain content type": Case(
        {"name": "x"}, headers={"Content-Type": "text/plain"}, status=415, field="Content-Type"
    ),
    "bad If-Match": Case({"name": "x"}, headers={"If-Match": "not-an-etag"}, field="If-Match"),
    "stale If-Match": Case({"name": "x"}, headers={"If-Match": '"999"'}, status=412),
}


@pytest.mark.parametrize("case", PATCH_CASES.values(), ids=PATCH_CASES.keys())
def test_bad_patch_is_a_problem_naming_the_field_and_changes_nothing(
    api: Api, stored_job: dict[str, Any], case: Case
) -> None:
    before = store_snapshot(api.svc)

    resp = api.request(
        "PATCH", f"/v1/jobs/{stored_job['id']}", case.body, raw=case.raw, headers=case.headers
    )

    assert_problem(resp, case.status, case.field)
    assert store_snapshot(api.svc) == before


QUERY_CASES: dict[str, tuple[str, str]] = {
    "malformed jobs cursor": ("/v1/jobs?cursor=%21%21not-base64", "cursor"),
    "jobs cursor that is not a key": (
        "/v1/jobs?cursor=eyJhIjogMX0",  # {"a": 1}
        "cursor",
    ),
    "jobs limit 0": ("/v1/jobs?limit=0", "limit"),
    "jobs limit 201": ("/v1/jobs?limit=201", "limit"),
    "jobs unknown status": ("/v1/jobs?status=sleeping", "status"),
    "malformed executions cursor": ("/v1/jobs/{job}/executions?cursor=%21%21", "cursor"),
    "executions limit 0": ("/v1/jobs/{job}/executions?limit=0", "limit"),
}


@pytest.mark.parametrize("case", QUERY_CASES.values(), ids=QUERY_CASES.keys())
def test_bad_query_is_a_problem_naming_the_parameter(
    api: Api, stored_job: dict[str, Any], case: tuple[str, str]
) -> None:
    path, field_name = case
    before = store_snapshot(api.svc)

    resp = api.request("GET", path.format(job=stored_job["id"]))

    assert_problem(resp, 400, field_name)
    assert store_snapshot(api.svc) == before


def test_cursor_of_another_tenant_pages_only_the_callers_own_jobs(api: Api) -> None:
    """A cursor is a place in the caller's own list (a job id): another tenant's cursor reads
    the caller's jobs after that place, never the other tenant's."""
    for i in range(2):
        api.created_job(every("1h", name=f"mine-{i}"))
    cursor = api.request("GET", "/v1/jobs?limit=1").json["next_cursor"]
    theirs = api.created_job(every("1h", name="theirs"))

    resp = api.request("GET", f"/v1/jobs?cursor={cursor}", tenant="tenant-b")

    assert resp.status == 200
    assert resp.json["items"] == []
    assert theirs["id"] not in resp.text


def test_problem_detail_is_json_serialisable_text(api: Api) -> None:
    resp = api.request("POST", "/v1/jobs", every("0s"))

    assert isinstance(resp.json["detail"], str)
    assert json.loads(resp.text)["type"] == "about:blank"
