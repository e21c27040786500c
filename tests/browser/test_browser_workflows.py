"""A workflow run in the console: its page draws the tasks as a graph, layered by depth and
coloured by state, each task linked to its execution."""

from __future__ import annotations

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

    # Straight to the run: the job page's three parallel requests meet a race in `takt local`
    # (one shared resolver across request threads), which is not this page's to test.
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
