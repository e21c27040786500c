"""Across regions a change to an existing job is written in the lease holder's replica (issue 27,
scenario d; docs/ARCHITECTURE.md, "Regions"), so it meets the holder's advances of the job under
one region's conditional writes; with no holder, or one that cannot be reached, it is refused
with 503 and nothing is written anywhere.

One moto server keeps a backend per region, so the holder's replica here is the same tables in
`us-east-2`, reached by a client signed for that region: replication is not running, so the
test sees which replica each write went to.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.config import Config

import takt.wiring.api
from takt.aws import AwsClients
from takt.clock import ManualClock
from takt.config import Settings
from takt.resources import JOBS, REGIONS, TENANTS
from takt.store.region_lease import RegionLeaseStore
from takt.wiring import Services, install
from takt_cli.local.runtime import free_port
from tests.api.harness import TENANT, Api

HERE, HOLDER = "us-east-1", "us-east-2"
BODY = {"interval": "1h", "target": "https://svc/hook"}
# A PATCH then a DELETE in one region, as the API made them before changes were written in the
# lease holder's replica: the request rate's bucket, the read, the conditional write, the read
# of the result; the bucket, the read, the delete with its count.
SINGLE_REGION_CALLS = [
    ("UpdateItem", "tenants"),
    ("GetItem", "jobs"),
    ("UpdateItem", "jobs"),
    ("GetItem", "jobs"),
    ("UpdateItem", "tenants"),
    ("GetItem", "jobs"),
    ("TransactWriteItems", ""),
]


def _dynamodb(settings: Settings, region: str) -> Any:
    return _client(settings.aws_endpoint_url, region)


@functools.cache
def _client(endpoint: str | None, region: str) -> Any:
    return boto3.session.Session(region_name=region).client("dynamodb", endpoint_url=endpoint)


def _replicate(settings: Settings, table: str) -> None:
    """Copy `table`'s items from this region to the holder's, as MREC replication would."""
    here, there = _dynamodb(settings, HERE), _dynamodb(settings, HOLDER)
    for item in here.scan(TableName=table)["Items"]:
        there.put_item(TableName=table, Item=item)


def _job(settings: Settings, region: str, job_id: str) -> dict[str, Any] | None:
    key = {"tenant_id": {"S": TENANT}, "job_id": {"S": job_id}}
    answer = _dynamodb(settings, region).get_item(
        TableName=settings.jobs_table, Key=key, ConsistentRead=True
    )
    item: dict[str, Any] | None = answer.get("Item")
    return item


@pytest.fixture
def regions(settings: Settings, clock: ManualClock, aws_clients: AwsClients) -> Services:
    """This API in us-east-1 of a deployment across us-east-1 and us-east-2, with the tables
    a change to an existing job reaches in both and the lease table (empty) here."""
    lease_table = f"regions-{uuid.uuid4().hex[:8]}"
    _dynamodb(settings, HERE).create_table(**REGIONS.create_table_kwargs(lease_table))
    for spec in (JOBS, TENANTS):
        name = getattr(settings, spec.setting)
        _dynamodb(settings, HOLDER).create_table(**spec.create_table_kwargs(name))
    multi = settings.model_copy(
        update={"regions": (HERE, HOLDER), "region_lease_table": lease_table}
    )
    return Services(settings=multi, clients=aws_clients, clock=clock)


def _api_with_job(svc: Services, holder: str | None) -> tuple[Api, str]:
    install(svc)
    if holder is not None:
        settings = svc.settings
        RegionLeaseStore(_dynamodb(settings, HERE), settings.region_lease_table, 20_000).create(
            holder
        )
    api = Api(svc)
    job_id = api.created_job(BODY)["id"]
    for table in (svc.settings.jobs_table, svc.settings.tenants_table):
        _replicate(svc.settings, table)
    return api, job_id


@pytest.fixture(autouse=True)
def _uninstall() -> Any:
    yield
    install(None)


def test_an_edit_through_a_standby_is_written_in_the_lease_holders_replica(
    regions: Services,
) -> None:
    api, job_id = _api_with_job(regions, HOLDER)

    answer = api.request("PATCH", f"/v1/jobs/{job_id}", {"status": "paused"})

    assert answer.status == 200, answer.text
    assert answer.json["status"] == "paused", "the edit answers with the holder's job"
    held, here = _job(regions.settings, HOLDER, job_id), _job(regions.settings, HERE, job_id)
    assert held is not None and here is not None
    assert held["status"]["S"] == "paused", (
        "edits are written in the lease holder's replica: the holder's copy is paused"
    )
    assert here["status"]["S"] == "active", (
        "edits are written in the lease holder's replica, never in the standby's own"
    )


def test_a_delete_through_a_standby_is_made_in_the_lease_holders_replica(
    regions: Services,
) -> None:
    api, job_id = _api_with_job(regions, HOLDER)

    answer = api.request("DELETE", f"/v1/jobs/{job_id}")

    assert answer.status == 204, answer.text
    assert _job(regions.settings, HOLDER, job_id) is None, (
        "deletes are made in the lease holder's replica"
    )
    assert _job(regions.settings, HERE, job_id) is not None, (
        "deletes are made in the lease holder's replica, not in the standby's own"
    )


def test_the_lease_holders_own_api_writes_an_edit_in_its_own_replica(
    regions: Services,
) -> None:
    api, job_id = _api_with_job(regions, HERE)

    answer = api.request("PATCH", f"/v1/jobs/{job_id}", {"status": "paused"})

    assert answer.status == 200, answer.text
    here, there = _job(regions.settings, HERE, job_id), _job(regions.settings, HOLDER, job_id)
    assert here is not None and there is not None
    assert (here["status"]["S"], there["status"]["S"]) == ("paused", "active"), (
        "the holder's own API writes edits in its own replica"
    )


def test_an_edit_with_no_lease_holder_is_refused_with_503_and_changes_nothing(
    regions: Services,
) -> None:
    api, job_id = _api_with_job(regions, None)

    answer = api.request("PATCH", f"/v1/jobs/{job_id}", {"status": "paused"})

    assert answer.status == 503, answer.text
    assert answer.content_type == "application/problem+json"
    assert answer.headers.get("retry-after") == "5", "a refused edit says when to try again"
    assert "no region holds the region lease" in answer.json["detail"]
    for region in (HERE, HOLDER):
        job = _job(regions.settings, region, job_id)
        assert job is not None and job["status"]["S"] == "active", (
            f"an edit refused for want of a lease holder changes nothing in {region}"
        )


class _Failing(BaseHTTPRequestHandler):
    """A DynamoDB endpoint whose every answer is a server error."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"x"}'
        self.send_response(500)
        self.send_header("content-type", "application/x-amz-json-1.0")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        """Quiet: the test reads the API's answer, not the server's log."""


@pytest.fixture
def failing() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("holder_is", ["gone", "failing"])
def test_an_edit_whose_holder_cannot_be_reached_is_refused_with_503_never_written_here(
    regions: Services, monkeypatch: pytest.MonkeyPatch, failing: str, holder_is: str
) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}" if holder_is == "gone" else failing
    unreachable = Services(
        settings=regions.settings.model_copy(update={"region_endpoints": {HOLDER: endpoint}}),
        clients=regions.clients,
        clock=regions.clock,
    )

    def one_try(settings: Settings) -> Any:
        # The holder's moto is gone: one refused connection, not botocore's backed-off retries.
        return boto3.session.Session(region_name=settings.region).client(
            "dynamodb",
            endpoint_url=settings.aws_endpoint_url,
            config=Config(retries={"mode": "standard", "max_attempts": 1}),
        )

    monkeypatch.setattr(takt.wiring.api, "make_dynamodb_client", one_try)
    api, job_id = _api_with_job(unreachable, HOLDER)

    answer = api.request("PATCH", f"/v1/jobs/{job_id}", {"status": "paused"})

    assert answer.status == 503, answer.text
    assert answer.headers.get("retry-after") == "5"
    assert "cannot be reached" in answer.json["detail"]
    here = _job(unreachable.settings, HERE, job_id)
    assert here is not None and here["status"]["S"] == "active", (
        "an edit whose holder cannot be reached is never written in the local replica"
    )


def test_the_single_region_api_makes_the_calls_it_made_before_and_reads_no_lease(
    api: Api,
) -> None:
    job_id = api.created_job(BODY)["id"]
    calls: list[tuple[str, str]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        calls.append((model.name, params.get("TableName", "")))

    dynamodb = api.svc.clients.dynamodb
    dynamodb.meta.events.register("provide-client-params.dynamodb", record)
    try:
        assert api.request("PATCH", f"/v1/jobs/{job_id}", {"status": "paused"}).status == 200
        assert api.request("DELETE", f"/v1/jobs/{job_id}").status == 204
    finally:
        dynamodb.meta.events.unregister("provide-client-params.dynamodb", record)

    settings = api.svc.settings
    tables = {settings.jobs_table: "jobs", settings.tenants_table: "tenants"}
    named = [(operation, tables.get(table, table)) for operation, table in calls]
    assert named == SINGLE_REGION_CALLS, (
        "with no regions the API makes exactly the calls it made before: no lease read, "
        f"no other region: {calls}"
    )
