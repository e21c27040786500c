"""Workflows through the api handler: create with tasks, the runs routes, re-running a failed
run, tenant isolation, and bad task lists refused with a problem naming the task."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.harness import OTHER_TENANT, PROBLEM_JSON, Api, store_snapshot
from tests.support.workflows import calls, fail, heal, work

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def wf_task(key: str, task_id: str, *depends_on: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": task_id,
        "target": {"type": "handler", "name": "wf.task"},
        "payload": {"key": key, "task": task_id},
        "retry": {"max_attempts": 1},
        "depends_on": list(depends_on),
        **extra,
    }


def diamond(key: str) -> list[dict[str, Any]]:
    return [
        wf_task(key, "a"),
        wf_task(key, "b", "a"),
        wf_task(key, "c", "a"),
        wf_task(key, "d", "b", "c"),
    ]


def started_run(api: Api, tasks: list[dict[str, Any]]) -> tuple[str, str]:
    job = api.created_job({"interval": "1h", "tasks": tasks})
    resp = api.request("POST", f"/v1/jobs/{job['id']}/trigger")
    assert resp.status == 202, resp.text
    return job["id"], resp.json["id"]


def test_a_workflow_job_shows_its_tasks_and_no_target(api: Api) -> None:
    job = api.created_job({"interval": "1h", "tasks": diamond("shape")})

    assert job["target"] is None
    assert [t["id"] for t in job["tasks"]] == ["a", "b", "c", "d"]
    assert job["tasks"][3]["depends_on"] == ["b", "c"]
    assert job["tasks"][0]["target"] == "handler:wf.task"
    assert job["tasks"][0]["trigger_rule"] == "all_success"


def test_get_run_shows_each_task_state_and_its_executions(api: Api) -> None:
    job_id, run_id = started_run(api, diamond("api-get"))

    started = api.request("GET", f"/v1/runs/{run_id}").json
    assert started["state"] == "running"
    assert {t["id"]: t["state"] for t in started["tasks"]} == {
        "a": "pending",
        "b": "waiting",
        "c": "waiting",
        "d": "waiting",
    }
    work(api.svc)
    run = api.request("GET", f"/v1/runs/{run_id}").json

    assert run["state"] == "succeeded"
    assert run["counts"] == {"succeeded": 4}
    assert {t["id"]: t["depth"] for t in run["tasks"]} == {"a": 0, "b": 1, "c": 1, "d": 2}
    d = run["tasks"][3]
    assert [e["id"] for e in d["executions"]] == [f"{run_id}~d~0"]
    assert d["executions"][0]["state"] == "succeeded"
    listed = api.request("GET", f"/v1/jobs/{job_id}/runs").json
    assert [r["id"] for r in listed["items"]] == [run_id]
    assert listed["items"][0]["tasks_total"] == 4


def test_a_task_execution_is_an_ordinary_execution(api: Api) -> None:
    _, run_id = started_run(api, diamond("api-exec"))

    resp = api.request("GET", f"/v1/executions/{run_id}~a~0")

    assert resp.status == 200, resp.text
    assert resp.json["state"] == "pending"


def test_retry_reruns_the_failed_part_then_refuses_a_run_that_has_not_failed(api: Api) -> None:
    key = "api-retry"
    fail(key, "c")
    _, run_id = started_run(api, diamond(key))
    work(api.svc)
    failed = api.request("GET", f"/v1/runs/{run_id}").json
    assert failed["state"] == "failed"
    assert failed["counts"] == {"succeeded": 2, "failed": 1, "upstream_failed": 1}
    heal(key)

    resp = api.request("POST", f"/v1/runs/{run_id}/retry")

    assert resp.status == 202, resp.text
    assert resp.json["generation"] == 1
    work(api.svc)
    assert api.request("GET", f"/v1/runs/{run_id}").json["state"] == "succeeded"
    assert calls(key) == {"a": 1, "b": 1, "c": 2, "d": 1}
    again = api.request("POST", f"/v1/runs/{run_id}/retry")
    assert again.status == 409
    assert again.content_type == PROBLEM_JSON


def test_a_task_execution_is_re_run_through_its_run_not_alone(api: Api) -> None:
    key = "api-task-retry"
    fail(key, "a")
    _, run_id = started_run(api, [wf_task(key, "a")])
    work(api.svc)

    resp = api.request("POST", f"/v1/executions/{run_id}~a~0/retry")

    assert resp.status == 409
    assert "/v1/runs/" in resp.json["detail"]


def test_another_tenants_run_is_404(api: Api) -> None:
    job_id, run_id = started_run(api, diamond("api-tenant"))

    for method, path in [
        ("GET", f"/v1/runs/{run_id}"),
        ("POST", f"/v1/runs/{run_id}/retry"),
        ("GET", f"/v1/jobs/{job_id}/runs"),
        ("GET", f"/v1/executions/{run_id}~a~0"),
    ]:
        resp = api.request(method, path, tenant=OTHER_TENANT)
        assert resp.status == 404, (path, resp.text)
        assert resp.content_type == PROBLEM_JSON


@pytest.mark.parametrize("run_id", ["job_nope.20260302T120000000Z", "garbage", "job_x.short"])
def test_an_unknown_run_is_404(api: Api, run_id: str) -> None:
    assert api.request("GET", f"/v1/runs/{run_id}").status == 404


def test_an_execution_that_is_not_a_run_is_404_as_a_run(api: Api) -> None:
    job = api.created_job({"interval": "1h", "target": "https://svc/hook"})
    execution = api.request("POST", f"/v1/jobs/{job['id']}/trigger").json

    assert api.request("GET", f"/v1/runs/{execution['id']}").status == 404


def _t(task_id: str, *depends_on: str, **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "target": "https://svc/hook", "depends_on": list(depends_on), **extra}


BAD_TASKS: dict[str, tuple[dict[str, Any], str]] = {
    "cycle": (
        {"tasks": [_t("a"), _t("b", "a", "d"), _t("c", "b"), _t("d", "c")]},
        "tasks[1].depends_on",
    ),
    "self dependency": ({"tasks": [_t("a", "a")]}, "tasks[0].depends_on"),
    "unknown dependency": ({"tasks": [_t("a"), _t("b", "zz")]}, "tasks[1].depends_on"),
    "duplicate task id": ({"tasks": [_t("a"), _t("b"), _t("a")]}, "tasks[2].id"),
    "dependency listed twice": ({"tasks": [_t("a"), _t("b", "a", "a")]}, "tasks[1].depends_on"),
    "empty tasks": ({"tasks": []}, "tasks"),
    "too many tasks": ({"tasks": [_t(f"t{i}") for i in range(2001)]}, "tasks"),
    "both target and tasks": ({"target": "https://svc/hook", "tasks": [_t("a")]}, "target"),
    "neither target nor tasks": ({}, "target"),
    "bad task target": ({"tasks": [_t("a"), _t("b", target="ftp://x")]}, "tasks.1.target"),
    "bad task id": ({"tasks": [_t("a b")]}, "tasks.0.id"),
    "bad trigger rule": ({"tasks": [_t("a", trigger_rule="one_success")]}, "tasks.0.trigger_rule"),
    "unknown task field": ({"tasks": [_t("a", colour="blue")]}, "tasks.0.colour"),
}


@pytest.mark.parametrize("case", BAD_TASKS.values(), ids=BAD_TASKS.keys())
def test_a_bad_task_list_is_a_problem_naming_the_task_and_stores_nothing(
    api: Api, case: tuple[dict[str, Any], str]
) -> None:
    body, field = case
    before = store_snapshot(api.svc)

    resp = api.request("POST", "/v1/jobs", {"interval": "1h", **body})

    assert resp.status == 400, resp.text
    assert resp.content_type == PROBLEM_JSON
    assert field in [e["field"] for e in resp.json["errors"]], resp.json
    assert store_snapshot(api.svc) == before


def test_a_bad_task_list_in_an_update_is_refused_and_changes_nothing(api: Api) -> None:
    job = api.created_job({"interval": "1h", "tasks": [_t("a"), _t("b", "a")]})
    before = store_snapshot(api.svc)

    resp = api.request("PATCH", f"/v1/jobs/{job['id']}", {"tasks": [_t("a", "b"), _t("b", "a")]})

    assert resp.status == 400
    assert resp.json["errors"][0]["field"] == "tasks[0].depends_on"
    assert "cycle" in resp.json["detail"]
    assert store_snapshot(api.svc) == before


def test_an_update_can_turn_a_workflow_into_a_single_target_job(api: Api) -> None:
    job = api.created_job({"interval": "1h", "tasks": [_t("a")]})

    changed = api.request("PATCH", f"/v1/jobs/{job['id']}", {"target": "https://svc/other"}).json

    assert changed["target"] == "https://svc/other"
    assert changed["tasks"] is None
