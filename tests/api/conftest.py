"""The job API driven through its Lambda handler with API Gateway HTTP API (v2) events, on moto.

Each test gets fresh tables and lanes installed as the process-wide services the handler reads,
so the handler runs exactly as on AWS; only the endpoints differ. The boto3 clients are shared by
a module's tests: creating them costs more than creating the tables.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from takt.aws import AwsClients, make_clients
from takt.clock import ManualClock
from takt.config import Settings
from takt.wiring import Services, install
from takt_cli.local.provision import provision
from tests.api.harness import Api
from tests.support.env import TEST_EGRESS_ALLOW


@pytest.fixture(scope="module")
def aws_clients(moto_endpoint: str) -> AwsClients:
    return make_clients(Settings(aws_endpoint_url=moto_endpoint))


@pytest.fixture
def settings(moto_endpoint: str, aws_clients: AwsClients) -> Settings:
    """Settings naming a fresh set of tables and lanes, created on the moto server here."""
    uid = uuid.uuid4().hex[:8]
    base = Settings(
        jobs_table=f"jobs-{uid}",
        due_table=f"due-{uid}",
        executions_table=f"executions-{uid}",
        idempotency_table=f"idempotency-{uid}",
        tenants_table=f"tenants-{uid}",
        aws_endpoint_url=moto_endpoint,
        due_shards=4,
        open_shards=2,
        egress_allow=TEST_EGRESS_ALLOW,
    )
    env = provision(aws_clients, base, prefix=f"takt-{uid}")
    return base.model_copy(update={"lane_urls": json.loads(env["TAKT_LANE_URLS"])})


@pytest.fixture
def svc(settings: Settings, clock: ManualClock, aws_clients: AwsClients) -> Services:
    return Services(settings=settings, clients=aws_clients, clock=clock)


@pytest.fixture
def api(svc: Services) -> Iterator[Api]:
    install(svc)
    try:
        yield Api(svc)
    finally:
        install(None)
