"""Quarantine through the API: a listing skips (and parks) an item it cannot read and lists
the others; an admin lists the records and clears one once its item is repaired, which puts
the item back where it was met; no other role sees them."""

from __future__ import annotations

from takt.clock import ManualClock
from takt.store.jobs import UNINDEXED_SHARDS
from takt.wiring import Services
from tests.api.harness import OTHER_TENANT, TENANT, Api

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
