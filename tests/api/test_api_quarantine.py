"""Quarantine through the API: a listing skips (and parks) an item it cannot read and lists
the others; an admin lists the records and clears one once its item is repaired, which puts
the item back where it was met; no other role sees them."""

from __future__ import annotations

from takt.clock import ManualClock
from takt.models.records import job_key
from takt.store.jobs import UNINDEXED_SHARDS
from takt.wiring import Services
from tests.api.harness import OTHER_TENANT, TENANT, Api
from tests.api.test_api_overview import dead_execution, hourly

JOB = {"interval": "1h", "target": "https://svc.example/hook"}


def _break(svc: Services, job_id: str) -> None:
    """Store a time that does not read back, as an older writer or a hand edit might."""
    svc.clients.dynamodb.update_item(
        TableName=svc.settings.jobs_table,
        Key={"tenant_id": {"S": TENANT}, "job_id": {"S": job_id}},
        UpdateExpression="SET created_at = :x",
        ExpressionAttributeValues={":x": {"S": "0500-13-45T00:00:00Z"}},
    )


def _markers(svc: Services) -> list[tuple[str, int]]:
    return [
        (m.job_id, m.marked_ms)
        for shard in range(UNINDEXED_SHARDS)
        for m in svc.jobs.unindexed(shard, 2**62)
    ]


def test_a_job_that_cannot_be_read_is_left_out_of_the_listing_and_quarantined(
    api: Api, svc: Services
) -> None:
    bad, good = api.created_job(JOB), api.created_job(JOB)
    _break(svc, bad["id"])

    listed = api.request("GET", "/v1/jobs")
    quarantined = api.request("GET", "/v1/quarantine", role="admin")

    assert listed.status == 200
    assert [j["id"] for j in listed.json["items"]] == [good["id"]]
    [record] = quarantined.json["items"]
    assert record["key"] == {"tenant_id": TENANT, "job_id": bad["id"]}
    assert (record["table"], record["where"], record["tenant"]) == ("jobs", "api", TENANT)
    assert record["error"].startswith("ValueError")


def test_only_an_admin_sees_or_clears_quarantine(api: Api, svc: Services) -> None:
    bad = api.created_job(JOB)
    _break(svc, bad["id"])
    api.request("GET", "/v1/jobs")
    [record] = svc.quarantine.list()

    answers = [
        api.request("GET", "/v1/quarantine", role=role).status for role in ("read", "write")
    ] + [api.request("DELETE", f"/v1/quarantine/{record.id}", role="write").status]

    assert answers == [403, 403, 403]
    assert [r.id for r in svc.quarantine.list()] == [record.id]


def test_clearing_a_repaired_job_marks_it_for_the_reconciler(
    api: Api, svc: Services, clock: ManualClock
) -> None:
    bad = api.created_job(JOB)
    _break(svc, bad["id"])
    api.request("GET", "/v1/jobs")
    [record] = svc.quarantine.list()
    for job_id, marked in _markers(svc):
        svc.jobs.clear_unindexed(TENANT, job_id, marked)  # as an indexer that ran would
    svc.clients.dynamodb.update_item(
        TableName=svc.settings.jobs_table,
        Key={"tenant_id": {"S": TENANT}, "job_id": {"S": bad["id"]}},
        UpdateExpression="SET created_at = :t",
        ExpressionAttributeValues={":t": {"S": bad["created_at"]}},
    )

    cleared = api.request(
        "DELETE", f"/v1/quarantine/{record.id}", role="admin", tenant=OTHER_TENANT
    )
    again = api.request("DELETE", f"/v1/quarantine/{record.id}", role="admin")

    assert (cleared.status, again.status) == (204, 404)
    assert svc.quarantine.list() == []
    # Marked as of the epoch: the reconciler's next run indexes it from the job as it is.
    assert _markers(svc) == [(bad["id"], 0)]
    assert svc.reconciler.run(clock.now()).repaired == 1
    assert [j["id"] for j in api.request("GET", "/v1/jobs").json["items"]] == [bad["id"]]


def _break_execution(svc: Services, job_id: str, execution_id: str) -> None:
    """Give one execution of the job a time that does not read back."""
    items = svc.clients.dynamodb.query(
        TableName=svc.settings.executions_table,
        KeyConditionExpression="job_key = :k",
        ExpressionAttributeValues={":k": {"S": job_key(TENANT, job_id)}},
    )["Items"]
    (item,) = [i for i in items if i["execution_id"]["S"] == execution_id]
    svc.clients.dynamodb.update_item(
        TableName=svc.settings.executions_table,
        Key={"job_key": item["job_key"], "sk": item["sk"]},
        UpdateExpression="SET scheduled_time = :x",
        ExpressionAttributeValues={":x": {"S": "0500-13-45T00:00:00Z"}},
    )


def test_an_execution_that_cannot_be_read_is_left_out_of_the_history_and_the_dead_letters(
    api: Api, svc: Services, clock: ManualClock
) -> None:
    job = hourly(api)
    bad, good = dead_execution(api, clock, job["id"]), dead_execution(api, clock, job["id"])
    _break_execution(svc, job["id"], bad)

    history = api.request("GET", f"/v1/jobs/{job['id']}/executions")
    dead = api.request("GET", "/v1/executions?state=dead")
    quarantined = api.request("GET", "/v1/quarantine", role="admin")

    assert (history.status, dead.status) == (200, 200)
    assert [e["id"] for e in history.json["items"]] == [good]
    assert [e["id"] for e in dead.json["items"]] == [good]
    [record] = quarantined.json["items"]
    assert (record["table"], record["where"], record["tenant"]) == ("executions", "api", TENANT)
    assert record["key"]["job_key"] == job_key(TENANT, job["id"])
