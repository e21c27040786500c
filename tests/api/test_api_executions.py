"""Executions through the api handler: trigger, history paging, one execution, re-run."""

from __future__ import annotations

from typing import Any

import pytest

from takt.clock import ManualClock
from takt.models.records import ExecState
from takt.store.executions import Transition
from tests.api.harness import OTHER_TENANT, PROBLEM_JSON, TENANT, Api, lane_messages

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def make_job(api: Api, **extra: Any) -> str:
    body = {"interval": "1h", "target": "https://svc/hook", **extra}
    job_id: str = api.created_job(body)["id"]
    return job_id


def trigger(api: Api, job_id: str) -> dict[str, Any]:
    resp = api.request("POST", f"/v1/jobs/{job_id}/trigger")
    assert resp.status == 202, resp.text
    execution: dict[str, Any] = resp.json
    return execution


def finish(api: Api, execution: dict[str, Any], state: ExecState) -> None:
    """Move a pending execution to a final state directly in the store, as a worker would."""
    api.svc.executions.transition(
        TENANT,
        execution["id"],
        Transition(
            expect={"state": ExecState.PENDING, "attempt": execution["attempt"]},
            set={"state": state},
            remove=("open_shard", "check_at"),
        ),
    )


def test_trigger_answers_202_with_a_pending_manual_execution(api: Api) -> None:
    job_id = make_job(api)

    resp = api.request("POST", f"/v1/jobs/{job_id}/trigger")

    assert resp.status == 202
    execution = resp.json
    assert execution["job_id"] == job_id
    assert execution["id"].startswith(f"{job_id}.")
    assert (execution["state"], execution["trigger"], execution["attempt"]) == (
        "pending",
        "manual",
        1,
    )


def test_trigger_sends_the_execution_to_the_job_lane(api: Api) -> None:
    job_id = make_job(api, priority="high")

    execution = trigger(api, job_id)

    sent = [
        (m["tenant_id"], m["job_id"], m["execution_id"], m["attempt"])
        for m in lane_messages(api.svc, "high")
    ]
    assert sent == [(TENANT, job_id, execution["id"], 1)]
    assert lane_messages(api.svc, "default") == []


def test_trigger_of_an_unknown_job_is_404(api: Api) -> None:
    resp = api.request("POST", "/v1/jobs/job_nope/trigger")

    assert resp.status == 404
    assert resp.content_type == PROBLEM_JSON


def test_executions_are_listed_newest_first(api: Api, clock: ManualClock) -> None:
    job_id = make_job(api)
    ids = []
    for _ in range(3):
        ids.append(trigger(api, job_id)["id"])
        clock.advance(1)

    page = api.request("GET", f"/v1/jobs/{job_id}/executions").json

    assert [e["id"] for e in page["items"]] == list(reversed(ids))
    assert page["next_cursor"] is None


def test_executions_page_with_the_cursor_without_gaps_or_repeats(
    api: Api, clock: ManualClock
) -> None:
    job_id = make_job(api)
    ids = []
    for _ in range(5):
        ids.append(trigger(api, job_id)["id"])
        clock.advance(1)

    seen: list[str] = []
    path = f"/v1/jobs/{job_id}/executions?limit=2"
    for _ in range(10):
        page = api.request("GET", path).json
        assert len(page["items"]) <= 2
        seen.extend(e["id"] for e in page["items"])
        if not page["next_cursor"]:
            break
        path = f"/v1/jobs/{job_id}/executions?limit=2&cursor={page['next_cursor']}"

    assert seen == list(reversed(ids))


def test_executions_of_an_unknown_job_is_404(api: Api) -> None:
    assert api.request("GET", "/v1/jobs/job_nope/executions").status == 404


def test_get_execution_returns_it(api: Api) -> None:
    execution = trigger(api, make_job(api))

    resp = api.request("GET", f"/v1/executions/{execution['id']}")

    assert resp.status == 200
    assert resp.json == execution


def test_get_execution_of_another_tenant_is_404(api: Api) -> None:
    execution = trigger(api, make_job(api))

    resp = api.request("GET", f"/v1/executions/{execution['id']}", tenant=OTHER_TENANT)

    assert resp.status == 404


@pytest.mark.parametrize("execution_id", ["job_nope.20260302T120000000Z", "not-an-id"])
def test_get_unknown_or_malformed_execution_is_404(api: Api, execution_id: str) -> None:
    resp = api.request("GET", f"/v1/executions/{execution_id}")

    assert resp.status == 404
    assert resp.content_type == PROBLEM_JSON


def test_retry_of_a_dead_execution_makes_it_pending_with_the_next_attempt(api: Api) -> None:
    execution = trigger(api, make_job(api))
    lane_messages(api.svc)  # take the trigger's message off the lane
    finish(api, execution, ExecState.DEAD)

    resp = api.request("POST", f"/v1/executions/{execution['id']}/retry")

    assert resp.status == 202
    assert (resp.json["state"], resp.json["attempt"]) == ("pending", 2)
    stored = api.request("GET", f"/v1/executions/{execution['id']}").json
    assert (stored["state"], stored["attempt"]) == ("pending", 2)


def test_retry_of_a_dead_execution_sends_the_next_attempt_to_the_lane(api: Api) -> None:
    job_id = make_job(api)
    execution = trigger(api, job_id)
    lane_messages(api.svc)
    finish(api, execution, ExecState.DEAD)

    api.request("POST", f"/v1/executions/{execution['id']}/retry")

    assert [m["attempt"] for m in lane_messages(api.svc)] == [2]


def test_retry_of_a_failed_execution_is_accepted(api: Api) -> None:
    execution = trigger(api, make_job(api))
    finish(api, execution, ExecState.FAILED)

    resp = api.request("POST", f"/v1/executions/{execution['id']}/retry")

    assert resp.status == 202
    assert resp.json["state"] == "pending"


@pytest.mark.parametrize("state", [ExecState.SUCCEEDED, ExecState.PENDING])
def test_retry_of_an_execution_that_is_not_dead_or_failed_is_409(
    api: Api, state: ExecState
) -> None:
    execution = trigger(api, make_job(api))
    if state != ExecState.PENDING:
        finish(api, execution, state)

    resp = api.request("POST", f"/v1/executions/{execution['id']}/retry")

    assert resp.status == 409
    assert resp.content_type == PROBLEM_JSON
    assert api.request("GET", f"/v1/executions/{execution['id']}").json["state"] == state.value


def test_retry_of_another_tenant_execution_is_404(api: Api) -> None:
    execution = trigger(api, make_job(api))
    finish(api, execution, ExecState.DEAD)

    resp = api.request("POST", f"/v1/executions/{execution['id']}/retry", tenant=OTHER_TENANT)

    assert resp.status == 404
    assert api.request("GET", f"/v1/executions/{execution['id']}").json["state"] == "dead"


def stored_item(api: Api, execution_id: str) -> dict[str, Any]:
    record = api.svc.executions.get(TENANT, execution_id)
    return {"target": record.target, "payload": record.payload, "lane": record.lane}


def test_retry_re_runs_with_the_job_as_it_is_now(api: Api) -> None:
    job_id = make_job(api, payload={"v": 1})
    execution = trigger(api, job_id)
    lane_messages(api.svc)
    finish(api, execution, ExecState.DEAD)
    fixed = {"target": "https://svc/fixed", "payload": {"v": 2}, "priority": "high"}
    assert api.request("PATCH", f"/v1/jobs/{job_id}", fixed).status == 200

    resp = api.request("POST", f"/v1/executions/{execution['id']}/retry")

    assert resp.status == 202
    assert stored_item(api, execution["id"]) == {
        "target": "https://svc/fixed",
        "payload": {"v": 2},
        "lane": "high",
    }
    assert [m["attempt"] for m in lane_messages(api.svc, "high")] == [2]


def test_retry_as_was_re_sends_the_snapshot(api: Api) -> None:
    job_id = make_job(api, payload={"v": 1})
    execution = trigger(api, job_id)
    lane_messages(api.svc)
    finish(api, execution, ExecState.DEAD)
    api.request("PATCH", f"/v1/jobs/{job_id}", {"target": "https://svc/fixed", "payload": {"v": 2}})

    resp = api.request("POST", f"/v1/executions/{execution['id']}/retry", {"as_was": True})

    assert resp.status == 202
    assert stored_item(api, execution["id"]) == {
        "target": "https://svc/hook",
        "payload": {"v": 1},
        "lane": "default",
    }


def test_retry_of_a_deleted_job_s_execution_needs_as_was(api: Api) -> None:
    job_id = make_job(api)
    execution = trigger(api, job_id)
    finish(api, execution, ExecState.DEAD)
    assert api.request("DELETE", f"/v1/jobs/{job_id}").status == 204

    refused = api.request("POST", f"/v1/executions/{execution['id']}/retry")
    accepted = api.request("POST", f"/v1/executions/{execution['id']}/retry", {"as_was": True})

    assert refused.status == 409
    assert "as_was" in refused.json["detail"]
    assert accepted.status == 202


def test_retry_with_an_unknown_field_is_400_and_changes_nothing(api: Api) -> None:
    execution = trigger(api, make_job(api))
    finish(api, execution, ExecState.DEAD)

    resp = api.request("POST", f"/v1/executions/{execution['id']}/retry", {"as_is": True})

    assert resp.status == 400
    assert resp.json["errors"][0]["field"] == "as_is"
    assert api.request("GET", f"/v1/executions/{execution['id']}").json["state"] == "dead"


def test_bulk_retry_re_runs_only_that_job_s_dead_executions(api: Api, clock: ManualClock) -> None:
    job_id, other_id = make_job(api), make_job(api)
    dead = []
    for _ in range(3):
        dead.append(trigger(api, job_id))
        clock.advance(1)
    other = trigger(api, other_id)
    for execution in [*dead, other]:
        finish(api, execution, ExecState.DEAD)

    resp = api.request("POST", f"/v1/jobs/{job_id}/executions/retry", {"limit": 2})
    rest = api.request("POST", f"/v1/jobs/{job_id}/executions/retry")

    assert resp.status == 200
    assert (len(resp.json["items"]), resp.json["more"]) == (2, True)
    assert (len(rest.json["items"]), rest.json["more"]) == (1, False)
    re_run = {e["id"] for e in resp.json["items"] + rest.json["items"]}
    assert re_run == {e["id"] for e in dead}
    assert api.request("GET", f"/v1/executions/{other['id']}").json["state"] == "dead"


def test_bulk_retry_of_an_unknown_job_is_404(api: Api) -> None:
    assert api.request("POST", "/v1/jobs/job_nope/executions/retry").status == 404


def die_on_its_last_attempt(api: Api, execution_id: str) -> None:
    """Every attempt of the execution's budget failed, as the worker would leave it."""
    record = api.svc.executions.get(TENANT, execution_id)
    api.svc.executions.transition(
        TENANT,
        execution_id,
        Transition(
            expect={"state": ExecState.PENDING, "attempt": record.attempt},
            set={"state": ExecState.DEAD, "attempt": record.max_attempts},
            remove=("open_shard", "check_at"),
        ),
    )


def test_a_re_run_reads_its_attempts_against_its_own_budget_with_the_fence_still_unique(
    api: Api,
) -> None:
    job_id = make_job(api, retry={"max_attempts": 3})
    execution_id = trigger(api, job_id)["id"]
    first = api.request("GET", f"/v1/executions/{execution_id}").json
    labels, fences = [first["attempt_label"]], []
    for _ in range(2):
        die_on_its_last_attempt(api, execution_id)
        fences.append(api.request("GET", f"/v1/executions/{execution_id}").json["attempt"])
        rerun = api.request("POST", f"/v1/executions/{execution_id}/retry")
        assert rerun.status == 202, rerun.text
        labels.append(rerun.json["attempt_label"])
        fences.append(rerun.json["attempt"])
    die_on_its_last_attempt(api, execution_id)
    dead = api.request("GET", f"/v1/executions/{execution_id}").json

    assert [*labels, dead["attempt_label"]] == [
        "attempt 1 of 3",
        "re-run 1, attempt 1 of 3",
        "re-run 2, attempt 1 of 3",
        "re-run 2, attempt 3 of 3",
    ], "a re-run's attempts read against its own budget (max_attempts 3), not 'attempt 9 of 9'"
    assert (dead["rerun"], dead["rerun_attempt"], dead["rerun_max_attempts"]) == (2, 3, 3)
    # The fence (execution id, attempt) still never repeats: attempts count across re-runs.
    assert [*fences, dead["attempt"]] == [3, 4, 6, 7, 9]
