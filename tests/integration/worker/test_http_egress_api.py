"""The job API refuses HTTP targets the deployment's egress policy would refuse on sight: a 400
problem naming `target.url`, and nothing stored. Names are not resolved at create time: the
check when the job runs is the guarantee (test_http_egress.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from takt.wiring import Services, install
from tests.api.harness import PROBLEM_JSON, Api, store_snapshot
from tests.support.env import ServicesFactory


@pytest.fixture
def strict(make_svc: ServicesFactory) -> Services:
    """A deployment with the default (empty) allow list."""
    return make_svc(egress_allow=())


@pytest.fixture
def api(strict: Services) -> Iterator[Api]:
    install(strict)
    try:
        yield Api(strict)
    finally:
        install(None)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:8080/hook", "127.0.0.1 is loopback"),
        ("http://localhost/hook", "localhost is loopback"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is link-local"),
        ("http://169.254.170.2/v2/credentials", "169.254.170.2 is link-local"),
        ("http://[::1]:9000/", "::1 is loopback"),
        ("http://[::ffff:169.254.169.254]/", "::ffff:169.254.169.254 is link-local"),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254 is private"),
        ("http://2852039166/", "2852039166 is link-local"),
        ("https://10.0.0.5/hook", "10.0.0.5 is private"),
        ("https://100.64.1.1/hook", "100.64.1.1 is shared (CGNAT)"),
    ],
)
def test_a_literal_non_public_host_is_a_400_naming_target_url_that_stores_nothing(
    api: Api, strict: Services, url: str, reason: str
) -> None:
    before = store_snapshot(strict)

    answer = api.create({"interval": "1h", "target": url})

    assert (answer.status, answer.content_type) == (400, PROBLEM_JSON)
    [error] = answer.json["errors"]
    assert error["field"] == "target.url"
    assert error["message"].startswith(f"egress refused: {reason}")
    assert store_snapshot(strict) == before


def test_the_object_form_is_refused_the_same_way(api: Api) -> None:
    answer = api.create({"interval": "1h", "target": {"type": "http", "url": "http://127.1/"}})

    assert answer.status == 400
    assert [e["field"] for e in answer.json["errors"]] == ["target.url"]


def test_a_url_with_credentials_is_refused_and_points_at_secrets(api: Api) -> None:
    answer = api.create({"interval": "1h", "target": "https://user:pw@hooks.example/x"})

    assert answer.status == 400
    [error] = answer.json["errors"]
    assert error["field"] == "target.url"
    assert "auth.bearer_secret" in error["message"]
    assert "pw" not in answer.text


def test_a_host_name_is_accepted_at_create_time(api: Api) -> None:
    job = api.created_job({"interval": "1h", "target": "https://evil.test/hook"})

    assert job["target"] == "https://evil.test/hook"


def test_a_workflow_task_with_a_forbidden_target_is_refused_naming_the_task(
    api: Api, strict: Services
) -> None:
    before = store_snapshot(strict)
    tasks = [
        {"id": "fetch", "target": "https://hooks.example/fetch"},
        {"id": "probe", "target": "http://169.254.169.254/latest", "depends_on": ["fetch"]},
    ]

    answer = api.create({"interval": "1h", "tasks": tasks})

    assert answer.status == 400
    [error] = answer.json["errors"]
    assert error["field"] == "tasks[1].target.url"
    assert error["message"].startswith("egress refused: 169.254.169.254 is link-local")
    assert store_snapshot(strict) == before


def test_a_patch_to_a_forbidden_target_is_refused_and_leaves_the_job(api: Api) -> None:
    job = api.created_job({"interval": "1h", "target": "https://hooks.example/a"})

    answer = api.request("PATCH", f"/v1/jobs/{job['id']}", {"target": "http://169.254.169.254/"})

    assert answer.status == 400
    assert [e["field"] for e in answer.json["errors"]] == ["target.url"]
    assert api.request("GET", f"/v1/jobs/{job['id']}").json["target"] == job["target"]


def test_an_allow_listed_address_is_accepted(make_svc: ServicesFactory) -> None:
    svc = make_svc(egress_allow=("10.0.0.0/8", "localhost"))
    install(svc)
    try:
        api = Api(svc)
        private = api.created_job({"interval": "1h", "target": "http://10.1.2.3:8080/x"})
        local = api.created_job({"interval": "1h", "target": "http://localhost/x"})
        refused = api.create({"interval": "1h", "target": "http://127.0.0.1/x"})
    finally:
        install(None)

    assert (private["target"], local["target"]) == ("http://10.1.2.3:8080/x", "http://localhost/x")
    assert refused.status == 400


@pytest.mark.parametrize(
    ("notify", "message"),
    [
        ({"to": "http://169.254.169.254/latest"}, "egress refused: 169.254.169.254 is link-local"),
        ({"to": "handler:page_me"}, "a notification goes to an SNS topic ARN"),
        ({"to": "arn:aws:sns:eu-west-1:123456789012:ops"}, "target is in eu-west-1"),
        ({"to": "https://ops.example/hook", "on": ["late"]}, "Input should be 'dead' or"),
        ({"to": "https://ops.example/hook", "after_failures": 0}, "greater than or equal to 1"),
    ],
)
def test_a_bad_notification_policy_is_a_400_naming_notify_that_stores_nothing(
    api: Api, strict: Services, notify: dict[str, object], message: str
) -> None:
    before = store_snapshot(strict)

    answer = api.create({"interval": "1h", "target": "https://hooks.example/x", "notify": notify})

    assert answer.status == 400
    [error] = answer.json["errors"]
    assert error["field"].startswith("notify")
    assert message in error["message"]
    assert store_snapshot(strict) == before


def test_a_notification_policy_is_stored_and_a_patch_of_null_clears_it(api: Api) -> None:
    job = api.created_job(
        {
            "interval": "1h",
            "target": "https://hooks.example/x",
            "notify": {"to": "arn:aws:sns:us-east-1:123456789012:ops", "on": ["stopped"]},
        }
    )
    cleared = api.request("PATCH", f"/v1/jobs/{job['id']}", {"notify": None})

    assert job["notify"] == {
        "to": "arn:aws:sns:us-east-1:123456789012:ops",
        "on": ["stopped"],
        "after_failures": 3,
    }
    assert cleared.json["notify"] is None
