"""Secrets that HTTP targets name, read from Secrets Manager (moto's server) by the real worker
path: sent where they belong, cached, confined to the tenant's prefix, and never written to a
log, an execution or an API answer."""

from __future__ import annotations

import base64
import hmac
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from takt.aws import make_secrets_client
from takt.clock import ManualClock
from takt.config import Settings
from takt.models.records import ExecState
from takt.models.targets import HttpSpec, parse_target
from takt.targets.secrets import SecretError, SecretsManagerSource, name_problem
from takt.tenants.webhook_keys import derive
from takt.wiring import Services, install
from tests.api.harness import OTHER_TENANT, PROBLEM_JSON, Api, store_snapshot
from tests.integration.worker.conftest import runner_for, stored, submit_to
from tests.support.env import ServicesFactory
from tests.support.jobs import TENANT
from tests.support.receiver import Receiver, Reply

TOKEN = "tok-" + uuid.uuid4().hex
API_KEY = "key-" + uuid.uuid4().hex
SIGNING_KEY = base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()


@pytest.fixture(scope="module")
def client(moto_endpoint: str) -> Any:
    return make_secrets_client(Settings(aws_endpoint_url=moto_endpoint))


@pytest.fixture
def secrets(client: Any) -> Callable[[str, str], str]:
    """Creates a secret with a name unique to this test (moto's server outlives tests)."""
    run = uuid.uuid4().hex[:8]

    def create(name: str, value: str) -> str:
        full = f"takt/{TENANT}/{run}/{name}"
        client.create_secret(Name=full, SecretString=value)
        return full

    return create


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


@pytest.fixture
def api(svc: Services) -> Iterator[Api]:
    install(svc)
    try:
        yield Api(svc)
    finally:
        install(None)


def run(svc: Services, clock: ManualClock, spec: HttpSpec) -> Any:
    record, message = submit_to(svc, clock, spec.text())
    outcome = runner_for(svc).process(message)
    return outcome, stored(svc, record)


def signature(key: str, msg_id: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(base64.b64decode(key), f"{msg_id}.{timestamp}.".encode() + body, "sha256")
    return "v1," + base64.b64encode(digest.digest()).decode()


def test_a_bearer_and_header_secret_are_sent_and_never_logged_or_stored(
    svc: Services,
    clock: ManualClock,
    receiver: Receiver,
    secrets: Callable[[str, str], str],
    log_lines: Callable[[], list[dict[str, Any]]],
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    bearer = secrets("token", TOKEN)
    headers = secrets("headers", json.dumps({"X-Api-Key": API_KEY}))
    # The second call is redirected to the metadata address: a refusal that is logged.
    receiver.script(Reply(200))
    receiver.script(Reply(307, {"Location": "http://169.254.169.254/"}, body=b""))
    spec = HttpSpec(receiver.url, bearer_secret=bearer, headers_secret=headers)

    ok, ok_record = run(svc, clock, spec)
    refused, refused_record = run(svc, clock, spec)

    assert (ok.state, refused.state) == ("succeeded", "failed")
    first = receiver.calls[0]
    assert (first.header("Authorization"), first.header("X-Api-Key")) == (
        f"Bearer {TOKEN}",
        API_KEY,
    )
    assert refused_record.error == (
        "egress refused: 169.254.169.254 is link-local (after 1 redirects)"
    )
    logged = json.dumps(log_lines()) + caplog.text + "".join(capfd.readouterr())
    assert "http target not called" in logged
    stored_items = json.dumps(
        [ok_record.model_dump(mode="json"), refused_record.model_dump(mode="json")]
    )
    assert bearer in stored_items
    for value in (TOKEN, API_KEY):
        assert value not in logged
        assert value not in stored_items


def test_a_jobs_signing_secret_signs_its_requests(
    svc: Services, clock: ManualClock, receiver: Receiver, secrets: Callable[[str, str], str]
) -> None:
    name = secrets("whsec", "whsec_" + SIGNING_KEY)

    outcome, _ = run(svc, clock, HttpSpec(receiver.url, signing_secret=name))

    assert outcome.state == "succeeded"
    (call,) = receiver.calls
    msg_id, timestamp = call.header("webhook-id"), call.header("webhook-timestamp")
    assert msg_id is not None and timestamp is not None
    assert call.header("webhook-signature") == signature(SIGNING_KEY, msg_id, timestamp, call.body)


def test_the_deployments_master_secret_is_read_by_name(
    make_svc: ServicesFactory,
    clock: ManualClock,
    receiver: Receiver,
    secrets: Callable[[str, str], str],
) -> None:
    name = secrets("deployment-whsec", "whsec_" + SIGNING_KEY)
    svc = make_svc(signing_secret_name=name, signing_secret="whsec_bm90IHRoaXMgb25l")

    outcome, _ = run(svc, clock, HttpSpec(receiver.url))

    assert outcome.state == "succeeded"
    (call,) = receiver.calls
    # The deployment's secret is the master each tenant's key is derived from, never a key.
    tenant_key = derive(base64.b64decode(SIGNING_KEY), TENANT, 0).removeprefix("whsec_")
    assert call.header("webhook-signature") == signature(
        tenant_key,
        call.header("webhook-id") or "",
        call.header("webhook-timestamp") or "",
        call.body,
    )


def test_another_tenants_secret_is_refused_at_call_time_without_reading_it(
    svc: Services, clock: ManualClock, receiver: Receiver, client: Any
) -> None:
    theirs = f"takt/{OTHER_TENANT}/{uuid.uuid4().hex[:8]}/token"
    client.create_secret(Name=theirs, SecretString=TOKEN)

    outcome, record = run(svc, clock, HttpSpec(receiver.url, bearer_secret=theirs))

    assert (outcome.state, record.state) == ("failed", ExecState.FAILED)
    assert record.error is not None and record.error.startswith("secret refused: ")
    assert f"prefix 'takt/{TENANT}/'" in record.error
    assert receiver.calls == []


def test_a_missing_secret_fails_the_execution_without_a_retry(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    name = f"takt/{TENANT}/{uuid.uuid4().hex}/absent"

    outcome, record = run(svc, clock, HttpSpec(receiver.url, bearer_secret=name))

    assert (outcome.state, record.state) == ("failed", ExecState.FAILED)
    assert record.error == f"secret {name!r} not found"
    assert [a.outcome for a in record.attempts] == ["failed"]
    assert receiver.calls == []


def test_a_secret_is_read_once_within_its_cache_age_and_again_with_no_cache(
    moto_endpoint: str, secrets: Callable[[str, str], str]
) -> None:
    client = make_secrets_client(Settings(aws_endpoint_url=moto_endpoint))
    reads: list[str] = []
    client.meta.events.register(
        "before-parameter-build.secrets-manager.GetSecretValue",
        lambda params, **_: reads.append(params["SecretId"]),
    )
    name = secrets("cached", "v1")
    cached = SecretsManagerSource(lambda: client, max_age_sec=60)
    uncached = SecretsManagerSource(lambda: client, max_age_sec=0)

    assert [cached.get(name), cached.get(name)] == ["v1", "v1"]
    client.put_secret_value(SecretId=name, SecretString="v2")
    assert cached.get(name) == "v1"
    assert uncached.get(name) == "v2"
    assert reads == [name, name]


def test_a_secret_that_cannot_be_reached_is_a_retryable_error(svc: Services) -> None:
    broken = svc.settings.model_copy(update={"aws_endpoint_url": "http://127.0.0.1:9"})
    source = SecretsManagerSource(lambda: make_secrets_client(broken), max_age_sec=0)

    with pytest.raises(SecretError) as caught:
        source.get(f"takt/{TENANT}/x")

    assert caught.value.permanent is False
    assert "connection failed" in str(caught.value)


@pytest.mark.parametrize(
    ("name", "tenant", "ok"),
    [
        ("takt/acme/token", "acme", True),
        ("takt/acme/team/token", "acme", True),
        ("takt/acme2/token", "acme", False),
        ("takt/acme/", "acme", False),
        ("other/acme/token", "acme", False),
        ("takt/acme/evil/token", "acme/evil", False),
    ],
)
def test_a_tenant_may_name_only_secrets_under_its_own_prefix(
    name: str, tenant: str, ok: bool
) -> None:
    assert (name_problem(name, tenant, "takt/") is None) is ok


def test_the_api_stores_and_returns_secret_names_only(
    api: Api, secrets: Callable[[str, str], str]
) -> None:
    name = secrets("api-token", TOKEN)
    target = {"type": "http", "url": "https://hooks.example/x", "auth": {"bearer_secret": name}}

    job = api.created_job({"interval": "1h", "target": target})
    fetched = api.request("GET", f"/v1/jobs/{job['id']}")

    assert json.loads(job["target"]) == {
        "type": "http",
        "url": "https://hooks.example/x",
        "auth": {"bearer_secret": name},
    }
    assert fetched.json["target"] == job["target"]
    assert TOKEN not in fetched.text


@pytest.mark.parametrize(
    ("target", "field"),
    [
        (
            {
                "type": "http",
                "url": "https://hooks.example/x",
                "auth": {"bearer_secret": f"takt/{OTHER_TENANT}/token"},
            },
            "target.auth.bearer_secret",
        ),
        (
            {
                "type": "http",
                "url": "https://hooks.example/x",
                "auth": {"headers_secret": "prod/db-password"},
            },
            "target.auth.headers_secret",
        ),
        (
            {"type": "http", "url": "https://hooks.example/x", "signing_secret": "takt/"},
            "target.signing_secret",
        ),
    ],
)
def test_a_secret_outside_the_tenants_prefix_is_a_400_naming_its_field(
    api: Api, svc: Services, target: dict[str, Any], field: str
) -> None:
    before = store_snapshot(svc)

    answer = api.create({"interval": "1h", "target": target})

    assert (answer.status, answer.content_type) == (400, PROBLEM_JSON)
    assert [e["field"] for e in answer.json["errors"]] == [field]
    assert store_snapshot(svc) == before


def test_the_stored_form_of_a_target_with_secrets_parses_back_to_the_same_target() -> None:
    spec = HttpSpec("https://h.example/", bearer_secret="takt/a/t", signing_secret="takt/a/s")

    assert spec.text() == (
        '{"auth":{"bearer_secret":"takt/a/t"},"signing_secret":"takt/a/s","type":"http",'
        '"url":"https://h.example/"}'
    )
    assert parse_target(spec.text()) == spec
    assert HttpSpec("https://h.example/").text() == "https://h.example/"
