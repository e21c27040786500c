"""Job names are unique among a tenant's jobs: a create or rename to a taken name is a 409
naming the field, and changes nothing; a rename or delete gives the old name back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pytest
from botocore.exceptions import ClientError

from takt.clock import ManualClock
from takt.store.names import SETTLE_SEC, JobNames
from tests.api.harness import OTHER_TENANT, PROBLEM_JSON, TENANT, Api

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def body(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "interval": "1h", "target": "https://svc/hook", **extra}


def names(api: Api) -> list[str]:
    return sorted(j["name"] for j in api.request("GET", "/v1/jobs").json["items"])


def test_a_second_job_with_a_taken_name_is_409_and_not_stored(api: Api) -> None:
    first = api.created_job(body("nightly"))

    resp = api.create(body("nightly"))

    assert resp.status == 409
    assert resp.content_type == PROBLEM_JSON
    assert resp.json["errors"] == [{"field": "name", "message": f"taken by job {first['id']}"}]
    assert names(api) == ["nightly"]


def test_another_tenant_may_use_the_same_name(api: Api) -> None:
    api.created_job(body("nightly"))

    resp = api.request("POST", "/v1/jobs", body("nightly"), tenant=OTHER_TENANT)

    assert resp.status == 201


def test_renaming_to_a_taken_name_is_409_and_changes_nothing(api: Api) -> None:
    api.created_job(body("a"))
    b = api.created_job(body("b"))

    resp = api.request("PATCH", f"/v1/jobs/{b['id']}", {"name": "a"})

    assert resp.status == 409
    assert resp.json["errors"][0]["field"] == "name"
    assert names(api) == ["a", "b"]


def test_a_rename_and_a_delete_give_the_old_name_back(api: Api) -> None:
    renamed = api.created_job(body("old"))
    deleted = api.created_job(body("gone"))

    assert api.request("PATCH", f"/v1/jobs/{renamed['id']}", {"name": "new"}).status == 200
    assert api.request("DELETE", f"/v1/jobs/{deleted['id']}").status == 204

    assert api.create(body("old")).status == 201
    assert api.create(body("gone")).status == 201
    assert api.create(body("new")).status == 409


def test_a_claim_left_by_a_crashed_create_is_taken_over_once_settled(
    api: Api, clock: ManualClock
) -> None:
    claims = JobNames(api.svc.clients.dynamodb, api.svc.settings.tenants_table)
    now_ms = int(clock.now().timestamp() * 1000)
    claims.claim(TENANT, "orphan", "job_never_written", now_ms, lambda holder: False)

    in_flight = api.create(body("orphan"))
    clock.advance(SETTLE_SEC + 1)
    settled = api.create(body("orphan"))

    assert in_flight.status == 409
    assert settled.status == 201


def test_a_deleted_job_is_listed_by_the_name_it_had_while_its_history_is_kept(
    api: Api, clock: ManualClock
) -> None:
    """A deleted job's history is found by its former name, newest deletion first, while its
    executions are kept; a new job of that name is what the name names among the jobs."""
    older = api.created_job(body("nightly"))
    assert api.request("DELETE", f"/v1/jobs/{older['id']}").status == 204
    clock.advance(60)
    newer = api.created_job(body("nightly"))
    assert api.request("DELETE", f"/v1/jobs/{newer['id']}").status == 204
    current = api.created_job(body("nightly"))
    retention_sec = int(api.svc.settings.history_retention_days * 86400)

    found = api.request("GET", "/v1/deleted-jobs?name=nightly")
    assert found.status == 200, "a deleted job's history is found by the name it had"
    listed = found.json["items"]
    prefix = api.request("GET", "/v1/deleted-jobs?name=night").json["items"]
    clock.advance(retention_sec - 59)
    later = api.request("GET", "/v1/deleted-jobs?name=nightly").json["items"]

    assert [job["id"] for job in listed] == [newer["id"], older["id"]], (
        "a deleted job's history is found by the name it had, newest deletion first"
    )
    assert listed[0] == {
        "id": newer["id"],
        "name": "nightly",
        "deleted_at": "2026-03-02T12:01:00Z",
        "history_until": "2026-03-09T12:01:00Z",
    }
    assert [job["id"] for job in api.request("GET", "/v1/jobs?name=nightly").json["items"]] == [
        current["id"]
    ], "a new job of the name is the job the name names"
    assert prefix == [], "the former name is matched whole, not as a prefix"
    assert [job["id"] for job in later] == [newer["id"]], (
        "a deleted job is listed by its name only while its history is kept"
    )


def test_deleted_jobs_without_a_name_is_400_naming_it(api: Api) -> None:
    resp = api.request("GET", "/v1/deleted-jobs")

    assert resp.status == 400, "bad input gets a clear error: the look-up needs the name"
    assert resp.content_type == PROBLEM_JSON
    assert [error["field"] for error in resp.json["errors"]] == ["name"]


class ThrottledPuts:
    """A DynamoDB client whose every PutItem is refused, as a throttled table refuses it."""

    def put_item(self, **kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "PutItem")


def test_a_former_name_that_cannot_be_written_is_logged_not_raised_after_the_delete(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The delete has happened before its former name is written: a failed write of the name
    must not turn the delete into an error (a retry would only be 404)."""
    names = JobNames(cast("DynamoDBClient", ThrottledPuts()), "tenants")
    raised: ClientError | None = None

    try:
        names.remember_deleted(TENANT, "nightly", "job_01", 1_000, 2_000)
    except ClientError as exc:
        raised = exc

    assert raised is None, "a deleted job's former name is best effort after the delete"
    assert "former name not recorded" in caplog.text
