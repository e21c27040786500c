"""The bad-request table: one bad value for every field of the job API's request bodies
(`JobCreate`, `JobPatch`, and the fields nested in them), each answered with a problem+json 4xx
naming the field, every table (`takt.resources.TABLES`) and lane unchanged afterwards.

The table is checked against the models themselves, so a field added to the API without a bad
case here fails `test_the_table_covers_every_field_of_the_api`.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from takt.api.models import JobCreate, JobPatch
from tests.api.harness import PROBLEM_JSON, Api, store_snapshot

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

BASE = {"interval": "1h", "target": "https://svc/hook"}
TOO_BIG = "x" * (256 * 1024 + 1)

# field path -> (a bad value for it, the status it must get)
BAD: dict[str, tuple[Any, int]] = {
    "name": ("n" * 201, 400),
    "status": ("completed", 400),
    "time_zone": ("Mars/Olympus_Mons", 400),
    "dst": ("sometimes", 400),
    "dst.gap": ("sometimes", 400),
    "dst.overlap": ("thrice", 400),
    "schedule": ("every tuesday", 400),
    "run_at": ("tomorrow", 400),
    "interval": ("fast", 400),
    "start_at": ("2026-13-01T00:00:00Z", 400),
    "end_at": ("yesterday", 400),
    "target": ("gopher://svc/hook", 400),
    "tasks": ([{"nope": 1}], 400),
    "payload": (TOO_BIG, 413),
    "retry": ("often", 400),
    "retry.max_attempts": (0, 400),
    "retry.backoff": ("random", 400),
    "retry.initial_interval": ("soon", 400),
    "retry.max_interval": ("-1s", 400),
    "retry.jitter": ("some", 400),
    "timeout_sec": (0, 400),
    "priority": ("urgent", 400),
    "catchup": ("sometimes", 400),
    "catchup_window": ("forever", 400),
    "overlap": ("maybe", 400),
    "jitter": ("25h", 400),
    "pause_until": ("next week", 400),
    "calendars": (["no spaces allowed"], 400),
    "notify": ("loudly", 400),
    "notify.to": ("handler:page_me", 400),
    "notify.on": (["late"], 400),
    "notify.after_failures": (0, 400),
    "idempotency_key": ("", 400),
    "run_late": ("yes", 400),
}


def _fields(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every field path of a request model, nested models included."""
    paths = set()
    for name, info in model.model_fields.items():
        path = prefix + name
        paths.add(path)
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            paths |= _fields(nested, path + ".")
        for arg in getattr(nested, "__args__", ()):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                paths |= _fields(arg, path + ".")
    return paths


def _body(path: str, value: Any, base: dict[str, Any]) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    body = dict(base)
    body[head] = {rest: value} if rest else value
    if head in {"schedule", "run_at", "tasks"}:
        body.pop("interval", None)  # one kind of schedule (or tasks) at a time
    if head == "tasks":
        body.pop("target", None)
    return body


CREATE = sorted(BAD)
PATCH = sorted(p for p in BAD if p != "idempotency_key")


def test_the_table_covers_every_field_of_the_api() -> None:
    wanted = {p for p in _fields(JobCreate) | _fields(JobPatch) if not p.startswith("tasks.")}
    assert wanted <= set(BAD), sorted(wanted - set(BAD))


def _refusal_problems(resp: Any, status: int, path: str) -> list[str]:
    """What is wrong with the answer to a bad `path` (nothing, when it is the right refusal)."""
    if resp.status != status or resp.content_type != PROBLEM_JSON:
        return [f"{path}: {resp.status} {resp.content_type} {resp.text[:200]}"]
    if status != 400:
        return []
    named = [e["field"] for e in resp.json["errors"]]
    if any(f == path or f.startswith((path + ".", path + "[")) for f in named):
        return []
    return [f"{path}: the problem names {named}"]


def test_every_bad_create_field_is_refused_and_changes_nothing(api: Api) -> None:
    """One store for the whole table (fresh tables per case would cost a minute): each refusal
    is checked against the snapshot taken before any of them."""
    api.created_job({**BASE, "name": "kept"})
    before = store_snapshot(api.svc)
    problems = []
    for path in CREATE:
        value, status = BAD[path]
        resp = api.request("POST", "/v1/jobs", _body(path, value, BASE))
        problems += _refusal_problems(resp, status, path)

    assert problems == []
    assert store_snapshot(api.svc) == before


def test_every_bad_patch_field_is_refused_and_changes_nothing(api: Api) -> None:
    job = api.created_job({**BASE, "name": "kept"})
    before = store_snapshot(api.svc)
    problems = []
    for path in PATCH:
        value, status = BAD[path]
        resp = api.request("PATCH", f"/v1/jobs/{job['id']}", _body(path, value, {}))
        problems += _refusal_problems(resp, status, path)

    assert problems == []
    assert store_snapshot(api.svc) == before
