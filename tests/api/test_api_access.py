"""Every route of the job API, walked from the resolver itself so routes added later are covered:
no identity is 401, a role without the right is 403, another tenant's ids answer exactly as ids
that do not exist, and nothing a refused call touches changes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.handler import handler
from takt.api.app import app
from takt.wiring import Services, install
from takt_cli.local.events import LocalContext, LocalIdentity, http_api_event
from tests.api.harness import OTHER_TENANT, PROBLEM_JSON, TENANT, Api, ApiResponse, store_snapshot

JOB_BODY = {"name": "nightly", "schedule": "0 3 * * *", "target": "https://svc.example/hook"}
# Bodies of the routes that take one; a route added without an entry here is sent `{}`, which
# is enough to show who may call it (validation never answers before the access check).
BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/v1/jobs"): JOB_BODY,
    ("PATCH", "/v1/jobs/<job_id>"): {"name": "renamed"},
    ("POST", "/v1/jobs/<job_id>/backfill"): {
        "from": "2026-03-03T00:00:00Z",
        "to": "2026-03-04T00:00:00Z",
    },
}
READ_METHODS = {"GET", "HEAD"}
# Reads that need the write right on top of the method's: a tenant's webhook signing keys sign
# what its receivers accept, which no read-only caller may be able to do (takt.api.webhook_keys).
WRITE_RIGHT_READS = {("GET", "/v1/webhook-keys")}
# Routes for an admin alone, whatever the tenant: quarantine names every tenant's items
# (takt.api.quarantine).
ADMIN_ONLY = {("GET", "/v1/quarantine"), ("DELETE", "/v1/quarantine/<record_id>")}


@dataclass(frozen=True)
class Route:
    method: str
    path: str

    @property
    def admin_only(self) -> bool:
        return (self.method, self.path) in ADMIN_ONLY

    @property
    def reads(self) -> bool:
        return (
            self.method in READ_METHODS
            and (self.method, self.path) not in WRITE_RIGHT_READS
            and not self.admin_only
        )

    @property
    def params(self) -> list[str]:
        return re.findall(r"<(\w+)>", self.path)

    def url(self, ids: dict[str, str]) -> str:
        return re.sub(r"<(\w+)>", lambda m: ids.get(m[1], f"{m[1]}_absent"), self.path)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def registered_routes() -> list[Route]:
    """Every route the resolver serves, as it matches them."""
    found = [Route(r.method, r.path) for r in (*app._static_routes, *app._dynamic_routes)]
    # Reads first: the write routes of a walk may delete what later routes would read.
    return sorted(found, key=lambda r: (not r.reads, r.path, r.method))


ROUTES = registered_routes()


@dataclass
class World:
    """Tenant A's job and execution, and the ids a route's path parameters take."""

    api: Api
    ids: dict[str, str]

    def call(
        self,
        route: Route,
        *,
        ids: dict[str, str] | None = None,
        tenant: str = TENANT,
        role: str = "write",
        headers: dict[str, str] | None = None,
    ) -> ApiResponse:
        body = BODIES.get((route.method, route.path), None if route.reads else {})
        return self.api.request(
            route.method,
            route.url(self.ids if ids is None else ids),
            body,
            tenant=tenant,
            role=role,
            headers=headers,
        )


@pytest.fixture
def world(api: Api) -> World:
    job = api.created_job(JOB_BODY)
    triggered = api.request("POST", f"/v1/jobs/{job['id']}/trigger")
    assert triggered.status == 202, triggered.text
    calendar = api.request("POST", "/v1/calendars", {"name": "nights"})
    assert calendar.status == 201, calendar.text
    return World(api, {"job_id": job["id"], "execution_id": triggered.json["id"], "name": "nights"})


def anonymous(route: Route, world: World) -> dict[str, Any]:
    """The route called with no identity in the request context at all."""
    body = BODIES.get((route.method, route.path), None if route.reads else {})
    data = b"" if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"} if body is not None else {}
    event = http_api_event(route.method, route.url(world.ids), headers, data, LocalIdentity())
    event["requestContext"]["authorizer"] = {}
    return cast(
        dict[str, Any], handler(event, cast(LambdaContext, LocalContext(function_name="takt-api")))
    )


def test_the_write_role_may_not_use_the_admin_routes(world: World) -> None:
    answers = {str(r): world.call(r, role="write") for r in ROUTES if r.admin_only}

    assert {route: a.status for route, a in answers.items()} == dict.fromkeys(answers, 403)
    assert len(answers) == len(ADMIN_ONLY)


def test_the_walk_covers_the_job_and_execution_routes() -> None:
    names = {str(r) for r in ROUTES}

    assert {"POST /v1/jobs", "DELETE /v1/jobs/<job_id>", "GET /v1/executions/<execution_id>"} <= (
        names
    )


def test_every_route_without_an_identity_is_401_and_changes_nothing(world: World) -> None:
    before = store_snapshot(world.api.svc)

    answers = {str(r): anonymous(r, world) for r in ROUTES}

    assert {route: a["statusCode"] for route, a in answers.items()} == dict.fromkeys(answers, 401)
    assert {a["headers"]["Content-Type"] for a in answers.values()} == {PROBLEM_JSON}
    assert store_snapshot(world.api.svc) == before


@pytest.mark.parametrize("role", ["read", "worker"])
def test_a_role_without_the_right_is_403_and_changes_nothing(world: World, role: str) -> None:
    forbidden = [r for r in ROUTES if role == "worker" or not r.reads]
    before = store_snapshot(world.api.svc)

    answers = {str(r): world.call(r, role=role) for r in forbidden}

    assert {route: a.status for route, a in answers.items()} == dict.fromkeys(answers, 403)
    assert {a.content_type for a in answers.values()} == {PROBLEM_JSON}
    assert store_snapshot(world.api.svc) == before


def test_the_read_role_reads_every_read_route(world: World) -> None:
    answers = {str(r): world.call(r, role="read") for r in ROUTES if r.reads}

    refused = {route: a.status for route, a in answers.items() if a.status in (401, 403)}
    assert refused == {}
    assert answers["GET /v1/jobs/<job_id>"].json["id"] == world.ids["job_id"]


@pytest.mark.parametrize("role", ["write", "admin"])
def test_the_write_and_admin_roles_pass_every_route(world: World, role: str) -> None:
    answers = {
        str(r): world.call(r, role=role) for r in ROUTES if role == "admin" or not r.admin_only
    }

    refused = {route: a.status for route, a in answers.items() if a.status in (401, 403)}
    assert refused == {}
    assert all(a.status < 500 for a in answers.values()), {
        route: a.text for route, a in answers.items() if a.status >= 500
    }


def test_another_tenants_ids_answer_as_ids_that_do_not_exist(world: World) -> None:
    with_ids = [r for r in ROUTES if r.params and not r.admin_only]
    before = store_snapshot(world.api.svc)

    theirs = {str(r): world.call(r, tenant=OTHER_TENANT) for r in with_ids}
    absent = {str(r): world.call(r, ids={}) for r in with_ids if not r.reads}
    after_refusals = store_snapshot(world.api.svc)
    absent |= {str(r): world.call(r, ids={}) for r in with_ids if r.reads}

    assert {route: a.status for route, a in theirs.items()} == dict.fromkeys(theirs, 404)
    assert {route: a.json["title"] for route, a in theirs.items()} == {
        route: a.json["title"] for route, a in absent.items()
    }
    assert after_refusals == before


def test_another_tenants_listings_show_none_of_mine(world: World) -> None:
    listings = [r for r in ROUTES if r.reads and not r.params]

    texts = {str(r): world.call(r, tenant=OTHER_TENANT).text for r in listings}

    leaked = {route for route, text in texts.items() if world.ids["job_id"] in text}
    assert leaked == set()


def test_an_admin_acts_for_the_tenant_it_names_and_is_audited(
    world: World, log_lines: Callable[[], list[dict[str, Any]]]
) -> None:
    job = f"/v1/jobs/{world.ids['job_id']}"

    own = world.api.request("GET", job, tenant="ops", role="admin")
    acting = world.api.request(
        "GET", job, tenant="ops", role="admin", headers={"Takt-Tenant": TENANT}
    )

    assert (own.status, acting.status) == (404, 200)
    [audit] = [line for line in log_lines() if line.get("audit")]
    assert (audit["principal"], audit["own_tenant"], audit["acting_for"]) == (
        "local-user",
        "ops",
        TENANT,
    )


def test_an_admin_creates_a_job_for_the_tenant_it_names(world: World) -> None:
    created = world.api.request(
        "POST", "/v1/jobs", JOB_BODY, tenant="ops", role="admin", headers={"Takt-Tenant": "t3"}
    )

    assert created.status == 201, created.text
    assert world.api.svc.jobs.get("t3", created.json["id"]).name == "nightly"


@pytest.mark.parametrize("role", ["write", "read"])
def test_only_an_admin_may_name_another_tenant(world: World, role: str) -> None:
    resp = world.api.request(
        "GET",
        f"/v1/jobs/{world.ids['job_id']}",
        tenant=OTHER_TENANT,
        role=role,
        headers={"Takt-Tenant": TENANT},
    )

    assert resp.status == 403
    assert resp.json["errors"] == [
        {"field": "Takt-Tenant", "message": "only an admin may name another tenant"}
    ]


def test_naming_ones_own_tenant_is_allowed_to_every_role(world: World) -> None:
    resp = world.api.request(
        "GET", f"/v1/jobs/{world.ids['job_id']}", role="read", headers={"Takt-Tenant": TENANT}
    )

    assert resp.status == 200


def test_an_admin_naming_a_malformed_tenant_is_400(world: World) -> None:
    resp = world.api.request(
        "GET", "/v1/jobs", tenant="ops", role="admin", headers={"Takt-Tenant": "a#b"}
    )

    assert resp.status == 400
    assert resp.json["errors"][0]["field"] == "Takt-Tenant"


def test_a_caller_whose_identity_maps_to_no_role_is_403(api: Api, svc: Services) -> None:
    install(replace(svc, settings=svc.settings.model_copy(update={"jwt_default_role": None})))

    resp = api.request("GET", "/v1/jobs", role="auditor")

    assert resp.status == 403
    assert "no role" in resp.json["detail"]


def test_a_forbidden_create_with_a_bad_body_is_403_not_400(world: World) -> None:
    resp = world.api.request("POST", "/v1/jobs", {"schedule": "nonsense"}, role="read")

    assert resp.status == 403
