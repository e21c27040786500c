"""Per-tenant limits on the job API: jobs stored, creation rate, payload size. Over a limit the
answer is 429 (with Retry-After where waiting helps) or 413, problem+json naming the limit, and
no table or lane changes. A retry of a create that succeeded is answered as a retry always is,
whatever the limits say now, and spends none of them."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest

from takt.api.errors import TooManyRequestsError
from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.clock import ManualClock
from takt.config import TenantLimits
from takt.models.records import JobRecord
from takt.wiring import Services, install
from tests.api.harness import OTHER_TENANT, PROBLEM_JSON, TENANT, Api, ApiResponse, store_snapshot
from tests.support.faults import interleave

Limited = Callable[..., Api]
KEY = {"Idempotency-Key": "k-1"}


def job(name: str = "job", **extra: Any) -> dict[str, Any]:
    return {"name": name, "interval": "1h", "target": "https://svc.example/hook", **extra}


@pytest.fixture
def limited(svc: Services) -> Limited:
    """The API with `TENANT`'s limits replaced; other tenants keep the defaults."""

    def make(**limits: Any) -> Api:
        overrides = {TENANT: TenantLimits(**limits)}
        settings = svc.settings.model_copy(update={"tenant_limit_overrides": overrides})
        limited_svc = replace(svc, settings=settings)
        install(limited_svc)
        return Api(limited_svc)

    return make


def assert_refused(resp: ApiResponse, status: int, field: str) -> None:
    assert resp.status == status, resp.text
    assert resp.content_type == PROBLEM_JSON
    assert [e["field"] for e in resp.json["errors"]] == [field]


def test_a_tenant_at_its_job_limit_gets_429_and_nothing_changes(limited: Limited) -> None:
    api = limited(max_jobs=2)
    api.created_job(job("a"))
    api.created_job(job("b"))
    before = store_snapshot(api.svc)

    resp = api.create(job("c"))

    assert_refused(resp, 429, "max_jobs")
    assert "retry-after" not in resp.headers
    assert store_snapshot(api.svc) == before


def test_deleting_a_job_makes_room_for_another(limited: Limited) -> None:
    api = limited(max_jobs=1)
    first = api.created_job(job("a"))

    refused = api.create(job("b")).status
    deleted = api.request("DELETE", f"/v1/jobs/{first['id']}").status
    again = api.create(job("b")).status

    assert (refused, deleted, again) == (429, 204, 201)
    assert api.svc.limiter.job_count(TENANT) == 1


def test_the_job_limit_is_per_tenant(limited: Limited) -> None:
    api = limited(max_jobs=1)
    api.created_job(job("a"))

    assert api.create(job("b"), tenant=OTHER_TENANT).status == 201


def test_a_refused_create_leaves_its_idempotency_key_unused(limited: Limited) -> None:
    api = limited(max_jobs=1)
    api.created_job(job("a"))
    before = store_snapshot(api.svc)

    resp = api.create(job("b"), headers=KEY)

    assert resp.status == 429
    assert store_snapshot(api.svc) == before


def test_a_retry_at_the_job_limit_gets_the_first_job_back_and_changes_nothing(
    limited: Limited,
) -> None:
    api = limited(max_jobs=1)
    first = api.create(job("a"), headers=KEY)
    before = store_snapshot(api.svc)

    again = api.create(job("a"), headers=KEY)

    assert (first.status, again.status) == (201, 200)
    assert again.json == first.json
    assert again.headers["etag"] == first.headers["etag"]
    assert store_snapshot(api.svc) == before
    assert api.svc.limiter.job_count(TENANT) == 1


def test_a_retry_after_the_limit_was_lowered_still_gets_its_job(limited: Limited) -> None:
    first = limited(max_jobs=5).create(job("a"), headers=KEY)
    limited(max_jobs=5).created_job(job("b"))
    api = limited(max_jobs=1)
    before = store_snapshot(api.svc)

    again = api.create(job("a"), headers=KEY)

    assert (again.status, again.json) == (200, first.json)
    assert store_snapshot(api.svc) == before


def test_a_retry_with_no_creation_token_left_gets_its_job_and_spends_none(
    limited: Limited,
) -> None:
    api = limited(create_per_sec=0.1, create_burst=1)
    first = api.create(job("a"), headers=KEY)
    before = store_snapshot(api.svc)

    again = api.create(job("a"), headers=KEY)

    assert (first.status, again.status) == (201, 200)
    assert again.json == first.json
    assert store_snapshot(api.svc) == before


def test_a_new_key_over_the_creation_rate_is_429_and_leaves_the_key_unused(
    limited: Limited, clock: ManualClock
) -> None:
    api = limited(create_per_sec=0.5, create_burst=1)
    api.created_job(job("a"))
    before = store_snapshot(api.svc)

    resp = api.create(job("b"), headers=KEY)
    after_refusal = store_snapshot(api.svc)
    clock.advance(2)
    later = api.create(job("b"), headers=KEY).status

    assert_refused(resp, 429, "create_per_sec")
    assert after_refusal == before
    assert later == 201


def test_racing_tries_of_one_key_at_the_limit_make_one_job(limited: Limited) -> None:
    api = limited(max_jobs=1)

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: api.create(job("a"), headers=KEY), range(4)))

    assert sorted(a.status for a in answers) == [200, 200, 200, 201]
    assert len({a.json["id"] for a in answers}) == 1
    assert api.svc.limiter.job_count(TENANT) == 1


def test_a_try_whose_twin_took_the_last_slot_after_its_lookup_gets_the_twins_job(
    limited: Limited,
) -> None:
    api = limited(max_jobs=1)
    twin: list[JobRecord] = []
    started = False

    def twin_lands_once() -> None:
        nonlocal started
        if not started:  # the twin's own lookup comes through here too
            started = True
            body = JobCreate.model_validate(job("a"))
            twin.append(JobService(api.svc.api).create(TENANT, body, KEY["Idempotency-Key"])[0])

    data = api.svc.api.tenant(TENANT)
    racing = replace(data, idempotency=interleave(data.idempotency, "find", twin_lands_once))
    api.svc.api = replace(api.svc.api, tenant=lambda _tenant_id: racing)

    resp = api.create(job("a"), headers=KEY)

    assert resp.status == 200, resp.text
    assert resp.json["id"] == twin[0].job_id
    assert api.svc.limiter.job_count(TENANT) == 1


def test_racing_creates_never_both_take_the_last_slot(limited: Limited) -> None:
    api = limited(max_jobs=1)
    # Racing as API instances do, each its own process: one resolver serves one request at a
    # time (a Lambda instance, takt local's API lock), so the race is the service's.
    service = JobService(api.svc.api)

    def create(i: int) -> int:
        try:
            service.create(TENANT, JobCreate.model_validate(job(f"j{i}")), None)
        except TooManyRequestsError:
            return 429
        return 201

    with ThreadPoolExecutor(4) as pool:
        statuses = sorted(pool.map(create, range(4)))

    assert statuses == [201, 429, 429, 429]
    assert api.svc.limiter.job_count(TENANT) == 1


def test_creating_faster_than_the_rate_is_429_with_retry_after(
    limited: Limited, clock: ManualClock
) -> None:
    api = limited(create_per_sec=0.5, create_burst=2)
    api.created_job(job("a"))
    api.created_job(job("b"))
    before = store_snapshot(api.svc)

    resp = api.create(job("c"))
    after_refusal = store_snapshot(api.svc)
    clock.advance(2)
    later = api.create(job("c")).status

    assert_refused(resp, 429, "create_per_sec")
    assert resp.headers["retry-after"] == "2"
    assert after_refusal == before
    assert later == 201


def test_a_bad_request_spends_no_creation_token(limited: Limited) -> None:
    api = limited(create_per_sec=0.1, create_burst=1)

    bad = api.create(job("a", interval="-5m")).status
    good = api.create(job("a")).status

    assert (bad, good) == (400, 201)


def test_a_payload_over_the_tenants_limit_is_413_and_nothing_changes(limited: Limited) -> None:
    api = limited(max_payload_bytes=64)
    before = store_snapshot(api.svc)

    resp = api.create(job("big", payload={"blob": "x" * 100}))

    assert_refused(resp, 413, "payload")
    assert store_snapshot(api.svc) == before
    assert api.create(job("big", payload={"blob": "x" * 100}), tenant=OTHER_TENANT).status == 201


def test_a_patch_over_the_payload_limit_is_413_and_changes_nothing(limited: Limited) -> None:
    api = limited(max_payload_bytes=64)
    created = api.created_job(job("a"))
    before = store_snapshot(api.svc)

    resp = api.request("PATCH", f"/v1/jobs/{created['id']}", {"payload": {"blob": "x" * 100}})

    assert_refused(resp, 413, "payload")
    assert store_snapshot(api.svc) == before


def test_without_limits_nothing_is_refused(limited: Limited) -> None:
    api = limited(max_jobs=None, create_per_sec=None)

    statuses = {api.create(job(f"j{i}")).status for i in range(5)}

    assert statuses == {201}
    assert api.svc.limiter.job_count(TENANT) == 5
