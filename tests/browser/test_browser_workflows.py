"""A workflow in the console: a run's page draws the tasks as a graph, layered by depth and
coloured by state, each task linked to its execution; the job's page draws the same graph, of its
definition before the first run and of its last run after."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import screenshot
from tests.e2e.harness import LocalTakt
from tests.e2e.receiver import Receiver

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (the dev group has it)"
).expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def test_a_run_is_drawn_as_a_graph_of_its_tasks(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    deps = {
        "extract": [],
        "load-a": ["extract"],
        "load-b": ["extract"],
        "report": ["load-a", "load-b"],
    }
    job = takt_local.create_job(
        {
            "name": "etl-graph",
            "interval": "1h",
            "tasks": [
                {"id": t, "target": receiver.path(), "depends_on": d} for t, d in deps.items()
            ],
        }
    )
    run_id = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger").body["id"]

    page.goto(f"/#/runs/{run_id}")

    graph = page.get_by_role("img", name="Run graph: 4 tasks")
    expect(graph).to_be_visible()
    expect(graph.locator("g.node.s-succeeded")).to_have_count(4, timeout=20_000)
    expect(page.get_by_role("heading", level=1)).to_contain_text("succeeded")
    columns = {
        task: graph.locator(f"g.node[data-task='{task}'] rect").get_attribute("x") for task in deps
    }
    assert columns["load-a"] == columns["load-b"]
    assert len({columns["extract"], columns["load-a"], columns["report"]}) == 3
    screenshot(page, "run-graph")
    graph.locator("g.node[data-task='report']").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"{run_id}~report~0")


def test_a_workflow_jobs_page_draws_its_graph_then_its_last_run(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job(
        {
            "name": "fan-out",
            "interval": "1d",
            "tasks": [
                {"id": "fetch", "target": receiver.path()},
                {"id": "resize", "target": receiver.path(), "depends_on": ["fetch"]},
                {"id": "index", "target": receiver.path(), "depends_on": ["fetch"]},
            ],
        }
    )
    page.goto(f"/#/jobs/{job['id']}")
    flow = page.get_by_role("region", name="Workflow")
    expect(flow.get_by_role("heading")).to_have_text("Workflow: not run yet")
    graph = flow.get_by_role("img", name="Workflow graph: 3 tasks")
    expect(graph.locator("g.node.s-waiting")).to_have_count(3)
    x = {
        t: graph.locator(f"g.node[data-task='{t}'] rect").get_attribute("x")
        for t in ("fetch", "resize", "index")
    }
    assert x["resize"] == x["index"] != x["fetch"]

    run_id = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger").body["id"]
    expect(graph.locator("g.node.s-succeeded")).to_have_count(3, timeout=20_000)
    expect(flow.get_by_role("heading")).to_contain_text("Workflow: last run")
    expect(flow.get_by_role("link", name=run_id.split(".")[-1])).to_have_attribute(
        "href", f"#/runs/{run_id}"
    )
    screenshot(page, "job-workflow-graph")


def test_create_a_workflow_from_the_new_job_dialog(page: Page, receiver: Receiver) -> None:
    page.goto("/#/jobs")
    page.get_by_role("button", name="New job").click()
    form = page.get_by_role("dialog", name="New job")
    form.get_by_label("Name").fill("two-step")
    form.get_by_label("Schedule").select_option("interval")
    form.get_by_label("When").fill("1d")
    form.get_by_label("Runs").select_option("tasks")
    expect(form.get_by_label("Target", exact=True)).to_be_hidden()
    tasks = form.get_by_label("Tasks (JSON)")
    create = form.get_by_role("button", name="Create job")
    target = receiver.path()

    tasks.fill("[{")
    create.click()
    expect(tasks).to_have_accessible_description(re.compile("not valid JSON"))
    fetch = {"id": "fetch", "target": target}
    tasks.fill(json.dumps([fetch, {"id": "load", "target": target, "depends_on": ["missing"]}]))
    create.click()
    expect(tasks).to_have_accessible_description(re.compile("missing"))
    expect(tasks).to_have_attribute("aria-invalid", "true")

    tasks.fill(json.dumps([fetch, {"id": "load", "target": target, "depends_on": ["fetch"]}]))
    create.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("two-step")
    graph = page.get_by_role("img", name="Workflow graph: 2 tasks")
    expect(graph.locator("g.node")).to_have_count(2)
