"""The one validation path (`takt.api.admission`): the access check before anything of the
request is read, bounded headers, a create that failed after claiming its key, the audit line's
level, and the tenant id rule; through the api handler, on moto."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError

from functions.api.handler import handler
from takt.api.admission import MAX_DEPTH, depth_of, parse_json
from takt.api.app import BODY_ROUTES, openapi_json
from takt.api.identity import is_tenant_id
from takt.api.models import TEXT_PATTERN
from takt.observability import logger
from takt_cli.local.events import LocalContext, LocalIdentity, http_api_event
from tests.api.harness import PROBLEM_JSON, Api, ApiResponse

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

BASE = {"interval": "1h", "target": "https://svc/hook"}


def _anonymous(method: str, path: str, body: bytes) -> ApiResponse:
    """A request that carries no caller identity (no authorizer ran)."""
    event = http_api_event(
        method, path, {"content-type": "application/json"}, body, LocalIdentity()
    )
    event["requestContext"].pop("authorizer")
    result = handler(event, cast(LambdaContext, LocalContext(function_name="takt-api")))
    return ApiResponse(int(result["statusCode"]), {}, result["body"])


@pytest.mark.parametrize(
    "body",
    [b"[" * 5000 + b"]" * 5000, b'{"payload": ' + b"9" * 5000 + b"}", b"{nope", b"NaN"],
)
def test_a_caller_without_identity_gets_401_whatever_its_body(api: Api, body: bytes) -> None:
    assert _anonymous("POST", "/v1/jobs", body).status == 401


def test_a_reader_is_refused_before_its_body_is_read(api: Api) -> None:
    resp = api.request("POST", "/v1/jobs", raw=b"[" * 5000, role="read")

    assert resp.status == 403


def test_json_depth_counts_brackets_outside_strings_only() -> None:
    assert depth_of('{"a": "[[[[{{{{", "b": [[1]]}') == 3
    assert depth_of('["\\"[[["]') == 1
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


@pytest.mark.parametrize(
    ("if_match", "status"),
    [('"1"', 200), ('W/"1"', 200), ("*", 200), ('"\u00b2"', 400), ('"' + "1" * 19 + '"', 400)],
)
def test_if_match_takes_ascii_digits_of_bounded_length(
    api: Api, if_match: str, status: int
) -> None:
    job = api.created_job(BASE)

    resp = api.request(
        "PATCH", f"/v1/jobs/{job['id']}", {"name": "n"}, headers={"If-Match": if_match}
    )

    assert resp.status == status, resp.text
    if status == 400:
        assert resp.json["errors"][0]["field"] == "If-Match"


@pytest.mark.parametrize("key", ["k" * 257, "a key", "caf\u00e9"])
def test_an_idempotency_key_header_is_bounded(api: Api, key: str) -> None:
    resp = api.create(BASE, headers={"Idempotency-Key": key})

    assert (resp.status, resp.content_type) == (400, PROBLEM_JSON)
    assert resp.json["errors"][0]["field"] == "Idempotency-Key"


def test_a_create_that_failed_after_claiming_its_key_gives_the_key_back(api: Api) -> None:
    """DynamoDB fails the job's write (500): the key is released, so the caller's next try under
    the same key, even with a corrected body, creates the job instead of getting 422."""
    events = api.svc.clients.dynamodb.meta.events

    def fail(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "InternalServerError", "Message": "injected"}},
            "TransactWriteItems",
        )

    events.register_first("before-call.dynamodb.TransactWriteItems", fail)
    try:
        failed = api.create({**BASE, "name": "first"}, headers={"Idempotency-Key": "k-500"})
    finally:
        events.unregister("before-call.dynamodb.TransactWriteItems", fail)

    retried = api.create({**BASE, "name": "second"}, headers={"Idempotency-Key": "k-500"})

    assert failed.status == 500
    assert retried.status == 201, retried.text
    assert retried.json["name"] == "second"


def test_the_audit_line_survives_a_log_level_of_error(
    api: Api, log_lines: Callable[[], list[dict[str, Any]]]
) -> None:
    logging.getLogger(logger.name).setLevel(logging.ERROR)

    resp = api.request(
        "GET", "/v1/jobs", tenant="ops", role="admin", headers={"Takt-Tenant": "tenant-a"}
    )

    assert resp.status == 200
    [audit] = [line for line in log_lines() if line.get("audit")]
    assert (audit["level"], audit["acting_for"], audit["own_tenant"]) == (
        "CRITICAL",
        "tenant-a",
        "ops",
    )


@pytest.mark.parametrize(
    ("tenant", "valid"),
    [
        ("acme", True),
        ("111122223333", True),
        ("org:acme/eu=1+x@y-z_.", True),
        ("a*", False),
        ("a?", False),
        ("${aws:username}", False),
        ("a{b}", False),
        ("a#b", False),
        ("a b", False),
        ("caf\u00e9", False),
        ("", False),
        ("a" * 129, False),
    ],
)
def test_a_tenant_id_is_what_a_session_tag_holds_without_wildcards(
    tenant: str, valid: bool
) -> None:
    assert is_tenant_id(tenant) is valid


def test_a_caller_whose_tenant_has_a_wildcard_is_unauthenticated(api: Api) -> None:
    resp = api.request("GET", "/v1/jobs", tenant="acme*")

    assert resp.status == 401
    assert json.loads(resp.text)["status"] == 401


def test_every_documented_request_body_is_validated_by_the_gate() -> None:
    """A route added with a body must be listed in BODY_ROUTES, or its body would reach
    Powertools' parser unchecked."""
    paths: dict[str, dict[str, Any]] = json.loads(openapi_json())["paths"]
    documented = {
        (method, path)
        for path, operations in paths.items()
        for method, operation in operations.items()
        if "requestBody" in operation
    }

    assert documented == {(method, path) for method, path, _, _ in BODY_ROUTES}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"interval": "1h", "target": "https://svc/hook", "interval": "2h"}', "interval"),
        (b'{"interval": "1h", "target": "https://svc/hook", "target": "https://b/x"}', "target"),
        (b'{"interval": "1h", "target": "https://svc/hook", "payload": {"a": 1, "a": 2}}', "a"),
    ],
)
def test_a_key_given_twice_in_one_object_is_refused_naming_it(
    api: Api, raw: bytes, field: str
) -> None:
    """Parsers disagree on which of two equal keys counts (the first, the last, an error), so
    a body with one would mean different things to takt and to whatever reads it next."""
    resp = api.request("POST", "/v1/jobs", raw=raw)

    assert (resp.status, resp.content_type) == (400, PROBLEM_JSON)
    assert resp.json["errors"][0]["field"] == field
    assert api.request("GET", "/v1/jobs").json["items"] == []


def test_a_body_that_is_not_utf8_is_refused_not_decoded_with_replacements(api: Api) -> None:
    raw = b'{"interval": "1h", "target": "https://svc/hook", "name": "\xff\xfe"}'
    event = http_api_event(
        "POST", "/v1/jobs", {"content-type": "application/json"}, raw, LocalIdentity("t-1")
    )

    result = handler(event, cast(LambdaContext, LocalContext(function_name="takt-api")))

    # API Gateway base64-encodes a body that is not text; the local server does the same.
    assert event["isBase64Encoded"] is True
    assert int(result["statusCode"]) == 400
    assert json.loads(result["body"])["errors"] == [{"field": "body", "message": "not UTF-8 text"}]
    assert api.request("GET", "/v1/jobs", tenant="t-1").json["items"] == []


@pytest.mark.parametrize(
    ("value", "status"), [(30.0, 201), (3e1, 201), (30.5, 400), (True, 400), ("30", 400)]
)
def test_an_integer_field_takes_a_number_of_integral_value_and_nothing_else(
    api: Api, value: Any, status: int
) -> None:
    """JSON Schema's `integer` (the OpenAPI document) is any number with a zero fraction, so
    30.0 is 30; a boolean or a string is never converted."""
    resp = api.create({**BASE, "timeout_sec": value, "retry": {"max_attempts": value}})

    assert resp.status == status, resp.text
    if status == 201:
        assert (resp.json["timeout_sec"], resp.json["retry"]["max_attempts"]) == (30, 30)
    else:
        assert resp.json["errors"][0]["field"] in ("timeout_sec", "retry.max_attempts")


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/jobs/{job}/executions/retry", 200),
        # The route ran: this test's deployment has no signing secret to rotate.
        ("/v1/webhook-keys/rotate", 409),
    ],
)
def test_a_route_whose_body_is_optional_takes_json_null_as_no_body(
    api: Api, path: str, status: int
) -> None:
    """The document says such a body is the model or null (`anyOf`), so null is no body."""
    job = api.created_job(BASE)

    resp = api.request("POST", path.format(job=job["id"]), raw=b"null")

    assert resp.status == status, resp.text


def test_a_required_body_of_json_null_is_refused(api: Api) -> None:
    resp = api.request("POST", "/v1/jobs", raw=b"null")

    assert (resp.status, resp.json["errors"][0]["field"]) == (400, "body")


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\ufdd0", "\ufffe", "\uffff"])
def test_a_name_with_a_line_separator_or_a_non_character_is_refused(api: Api, char: str) -> None:
    resp = api.create({**BASE, "name": f"a{char}b"})

    assert (resp.status, resp.json["errors"][0]["field"]) == (400, "name")
    assert re.fullmatch(TEXT_PATTERN, f"a{char}b") is None


@pytest.mark.parametrize("media_type", ["APPLICATION/JSON", "Application/Json; charset=UTF-8"])
def test_a_media_type_is_read_whatever_its_case(api: Api, media_type: str) -> None:
    resp = api.create(BASE, headers={"Content-Type": media_type})

    assert resp.status == 201, f"media types are case-insensitive (RFC 9110 8.3.1): {resp.text}"


@pytest.mark.parametrize(
    ("number", "status"),
    [("0.1e-400", 400), ("-1e-400", 400), ("1e400", 400), ("0e-400", 201), ("1e-300", 201)],
)
def test_a_number_beyond_a_double_is_refused_too_small_as_too_large(
    api: Api, number: str, status: int
) -> None:
    """A number that would be stored as another (0.0 for 0.1e-400, as 1e400 has no double) is
    refused the same way in both directions; zero written with an exponent is zero."""
    raw = b'{"interval": "1h", "target": "https://svc/hook", "payload": [%s]}' % number.encode()

    resp = api.request("POST", "/v1/jobs", raw=raw)

    assert resp.status == status, f"a number beyond a double is refused, not rounded: {resp.text}"
    if status == 400:
        assert resp.json["errors"][0]["field"] == "payload[0]"
        assert api.request("GET", "/v1/jobs").json["items"] == []
