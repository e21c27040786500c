"""Each tenant's API request rate, on every route: past it the tenant gets 429 problem+json with
Retry-After, another tenant does not, and the bucket holds across API instances (two services
sharing the tables, as two Lambda instances do)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from takt.clock import ManualClock
from takt.config import TenantLimits
from takt.wiring import Services, install
from tests.api.harness import (
    OTHER_TENANT,
    PROBLEM_JSON,
    TENANT,
    Api,
    ApiResponse,
    store_snapshot,
)


@pytest.fixture
def instances(svc: Services) -> Iterator[tuple[Api, Api]]:
    """Two API instances of one deployment where `TENANT` may send 1 request a second, 3 at
    once: their own services (and bucket caches), the same tables and clock."""
    overrides = {TENANT: TenantLimits(api_per_sec=1.0, api_burst=3)}
    settings = svc.settings.model_copy(update={"tenant_limit_overrides": overrides})
    first = replace(svc, settings=settings)
    second = Services(settings=settings, clients=svc.clients, clock=svc.clock)
    yield Api(first), Api(second)
    install(None)


def on(api: Api, method: str, path: str, **kwargs: object) -> ApiResponse:
    """The request, served by `api`'s instance."""
    install(api.svc)
    return api.request(method, path, **kwargs)  # type: ignore[arg-type]


def test_past_its_rate_a_tenant_gets_429_with_retry_after_on_any_route(
    instances: tuple[Api, Api],
) -> None:
    one, _ = instances
    allowed = [on(one, "GET", "/v1/jobs").status for _ in range(3)]

    refused = on(one, "GET", "/v1/stats")

    assert allowed == [200, 200, 200]
    assert refused.status == 429, refused.text
    assert refused.content_type == PROBLEM_JSON
    assert refused.headers["retry-after"] == "1"
    assert [e["field"] for e in refused.json["errors"]] == ["api_per_sec"]


def test_the_bucket_is_shared_by_every_api_instance(instances: tuple[Api, Api]) -> None:
    one, two = instances

    answers = [on(api, "GET", "/v1/jobs").status for api in (one, two, one, two)]

    assert answers == [200, 200, 200, 429]


def test_a_refused_request_is_refused_before_its_body_is_read_and_stores_nothing(
    instances: tuple[Api, Api],
) -> None:
    one, _ = instances
    for _ in range(3):
        on(one, "GET", "/v1/jobs")
    before = store_snapshot(one.svc)

    bad = on(one, "POST", "/v1/jobs", body={"name": 1})
    good = on(one, "POST", "/v1/jobs", body={"interval": "1h", "target": "https://svc/x"})

    assert (bad.status, good.status) == (429, 429)
    assert store_snapshot(one.svc) == before


def test_one_tenants_flood_leaves_another_tenants_requests_alone(
    instances: tuple[Api, Api],
) -> None:
    one, two = instances
    flood = [on(one, "GET", "/v1/jobs").status for _ in range(20)]

    other = [on(api, "GET", "/v1/jobs", tenant=OTHER_TENANT).status for api in (one, two)]

    assert flood.count(429) == 17
    assert other == [200, 200]


def test_tokens_come_back_at_the_tenants_rate(
    instances: tuple[Api, Api], clock: ManualClock
) -> None:
    one, two = instances
    for _ in range(4):
        on(one, "GET", "/v1/jobs")

    clock.advance(1.0)
    after_a_second = [on(two, "GET", "/v1/jobs").status for _ in range(2)]

    assert after_a_second == [200, 429]
