"""PATCHes racing on one job (docs/API.md, "Changing a job"): an unconditional PATCH applies to
the latest version, so two racing both apply; a PATCH with `If-Match` whose version was changed
meanwhile is 412; one that loses every try is 409, never 412, and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from takt.models.records import JobRecord
from takt.store.jobs import JobStore
from tests.api.harness import Api
from tests.api.test_api_jobs import interval_job

Write = Callable[..., None]


def rival_before(monkeypatch: pytest.MonkeyPatch, times: int) -> list[int]:
    """Before each of the next `times` writes of a job definition, another request's change
    (a new payload) commits over the version that write read; the versions it won over."""
    real: Write = JobStore.update_definition
    won: list[int] = []

    def lose_to_a_rival(
        store: JobStore, job: JobRecord, expected_version: int, fields: set[str], **kw: Any
    ) -> None:
        if len(won) < times:
            won.append(expected_version)
            rival = job.model_copy(
                update={"payload": {"rival": len(won)}, "version": expected_version + 1}
            )
            real(store, rival, expected_version, {"payload", "version"})
        real(store, job, expected_version, fields, **kw)

    monkeypatch.setattr(JobStore, "update_definition", lose_to_a_rival)
    return won


def test_an_unconditional_patch_that_loses_a_race_applies_to_the_latest_version(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = api.created_job(interval_job("race"))["id"]
    won = rival_before(monkeypatch, 1)

    resp = api.request("PATCH", f"/v1/jobs/{job_id}", {"name": "mine"})

    stored = api.request("GET", f"/v1/jobs/{job_id}").json
    assert won == [1]
    assert resp.status == 200, (
        "an unconditional PATCH applies to the latest version (docs/API.md); 412 is only for a "
        f"stale If-Match, but a PATCH that raced another answered {resp.status}: {resp.text}"
    )
    assert (stored["name"], stored["payload"], resp.headers["etag"]) == (
        "mine",
        {"rival": 1},
        '"3"',
    )


def test_a_patch_with_if_match_that_loses_a_race_is_412_and_changes_nothing(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = api.create(interval_job("race-if-match"))
    job_id = created.json["id"]
    rival_before(monkeypatch, 1)

    resp = api.request(
        "PATCH",
        f"/v1/jobs/{job_id}",
        {"name": "mine"},
        headers={"If-Match": created.headers["etag"]},
    )

    stored = api.request("GET", f"/v1/jobs/{job_id}").json
    assert resp.status == 412, f"a stale If-Match is 412 (docs/API.md), not {resp.status}"
    assert stored["name"] == "race-if-match"


def test_an_unconditional_patch_that_loses_every_try_is_409_and_changes_nothing(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = api.created_job(interval_job("race-always"))["id"]
    won = rival_before(monkeypatch, 100)

    resp = api.request("PATCH", f"/v1/jobs/{job_id}", {"name": "mine"})

    stored = api.request("GET", f"/v1/jobs/{job_id}").json
    assert resp.status == 409, (
        "an unconditional PATCH that keeps losing to other writes is a conflict (409, "
        f"docs/API.md), never 412: {resp.status}"
    )
    assert "during each of 5 tries" in resp.json["detail"]
    assert (len(won), stored["name"]) == (5, "race-always")
