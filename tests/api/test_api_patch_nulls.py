"""PATCH's null semantics as docs/API.md writes them down ("Changing a job"): the fields whose
null clears them, and the fields whose null is refused, are exactly what the API does, field by
field, and together they are every field a change takes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from takt.api.models import JobPatch
from tests.api.harness import PROBLEM_JSON, Api, store_snapshot

API_MD = Path(__file__).resolve().parents[2] / "docs" / "API.md"
JOB = {
    "name": "nightly",
    "schedule": "0 3 * * *",
    "end_at": "2999-01-01T00:00:00Z",
    "jitter": "5m",
    "payload": {"a": 1},
    "target": "https://svc/hook",
}


def _documented() -> tuple[set[str], set[str]]:
    """The two cells of the PATCH table's row: the fields null clears, the fields it may not."""
    section = API_MD.read_text().split("## Changing a job (PATCH)", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith("| `name`"))
    # A cell names its fields in backticks; what a parenthesis adds is about the field before it.
    allowed, refused = (re.sub(r"\([^)]*\)", "", cell) for cell in row.strip("|").split("|"))
    return set(re.findall(r"`(\w+)`", allowed)), set(re.findall(r"`(\w+)`", refused))


ALLOWED, REFUSED = _documented()


def test_the_table_names_every_field_of_a_change_once() -> None:
    assert ALLOWED.isdisjoint(REFUSED)
    assert set(JobPatch.model_fields) == ALLOWED | REFUSED
    assert set(JobPatch.NOT_NULL) == REFUSED


@pytest.mark.parametrize("field", sorted(ALLOWED))
def test_null_clears_a_field_the_table_allows(api: Api, field: str) -> None:
    job = api.created_job(JOB)

    resp = api.request("PATCH", f"/v1/jobs/{job['id']}", {field: None})

    assert resp.status == 200, resp.text
    assert resp.json[field] is None
    assert api.request("GET", f"/v1/jobs/{job['id']}").json[field] is None


@pytest.mark.parametrize("field", sorted(REFUSED))
def test_null_is_refused_naming_a_field_the_table_refuses(api: Api, field: str) -> None:
    job = api.created_job(JOB)
    before = store_snapshot(api.svc)

    resp = api.request("PATCH", f"/v1/jobs/{job['id']}", {field: None})

    assert (resp.status, resp.content_type) == (400, PROBLEM_JSON), resp.text
    assert [e["field"] for e in resp.json["errors"]] == [field]
    assert store_snapshot(api.svc) == before
