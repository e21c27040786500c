"""The API refuses a catch-up window the planner cannot plan (issue 28: `interval 1s, catchup all,
catchup_window 740000d` was accepted, then raised OverflowError at every claim and was parked in
quarantine): a 400 problem naming `catchup_window`, and nothing stored (takt.occurrences)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.harness import PROBLEM_JSON, Api, store_snapshot

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

EVERY_SECOND = {"interval": "1s", "target": "https://svc/hook", "catchup": "all"}


def _refused_naming_the_window(resp: Any) -> bool:
    fields = [e["field"] for e in resp.json.get("errors", [])]
    return resp.status == 400 and resp.content_type == PROBLEM_JSON and fields == ["catchup_window"]


@pytest.mark.parametrize(
    "body",
    [
        {**EVERY_SECOND, "catchup_window": "740000d"},
        {**EVERY_SECOND, "catchup_window": "28h"},
        {"schedule": "0 3 * * *", "target": "https://svc/hook", "catchup_window": "367d"},
    ],
    ids=["740000d-every-second", "more-than-a-firing-walks", "longer-than-366d"],
)
def test_a_create_whose_catchup_window_cannot_be_planned_is_refused(
    api: Api, body: dict[str, Any]
) -> None:
    before = store_snapshot(api.svc)
    resp = api.request("POST", "/v1/jobs", body)
    assert _refused_naming_the_window(resp), (
        f"rule: an unplannable catch-up window is refused naming catchup_window: {resp.text}"
    )
    assert store_snapshot(api.svc) == before, "rule: a refused create stores nothing"


def test_a_patch_that_makes_the_window_unplannable_is_refused_and_changes_nothing(
    api: Api,
) -> None:
    job = api.created_job({**EVERY_SECOND, "catchup": "once", "catchup_window": "2d"})
    before = store_snapshot(api.svc)
    resp = api.request("PATCH", f"/v1/jobs/{job['id']}", {"catchup": "all"})
    assert _refused_naming_the_window(resp), (
        f"rule: a patch whose combination cannot be planned is refused: {resp.text}"
    )
    assert store_snapshot(api.svc) == before, "rule: a refused patch changes nothing"


def test_a_window_one_firing_can_walk_is_accepted(api: Api) -> None:
    resp = api.request("POST", "/v1/jobs", {**EVERY_SECOND, "catchup_window": "27h"})
    assert resp.status == 201, f"rule: a plannable catch-up window is accepted: {resp.text}"
