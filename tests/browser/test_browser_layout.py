"""The console where there is nothing to show and on a phone: a fresh `takt local` (this
module's own) shows "no data" in words, and at 390 px no page scrolls sideways."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import console_page, screenshot
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver, Reply

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (the dev group has it)"
).expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

PHONE = {"width": 390, "height": 844}


def show_local_times(page: Page) -> None:
    """Switch the console to local times once it has drawn a page: the switch listens only from
    then on, so a click made while the page still loads is lost (the times stay in UTC)."""
    local = page.get_by_role("group", name="Show times in").get_by_role("button", name="Local")
    local.click()
    expect(local).to_have_attribute("aria-pressed", "true")


def test_an_empty_deployment_says_there_is_no_data(page: Page) -> None:
    """First in this module, so its `takt local` has no job and no run yet."""
    page.goto("/")
    runs = page.get_by_role("img", name="Runs per minute")
    expect(runs).to_contain_text("No runs in the last hour")
    expect(runs.locator("rect")).to_have_count(0)
    expect(page.get_by_role("img", name="Schedule lag p99")).to_contain_text("no lag to show")
    failing = page.locator("section", has=page.get_by_role("heading", name="Failing jobs"))
    expect(failing).to_contain_text("No job's last run failed.")
    screenshot(page, "overview-empty")

    page.goto("/#/jobs")
    expect(page.locator("main")).to_contain_text("No jobs yet: create one.")
    page.goto("/#/dead")
    expect(page.locator("main")).to_contain_text("No dead executions.")


def sideways(page: Page) -> int:
    """How far the page is wider than the window (0: nothing scrolls sideways)."""
    width: int = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    return width


def test_every_page_fits_a_phone(
    browser: Browser, takt_local: LocalTakt, receiver: Receiver
) -> None:
    long_name = "nightly-warehouse-export-to-the-reporting-bucket"
    job = takt_local.create_job(
        {
            "name": long_name,
            "schedule": "*/5 * * * *",
            "time_zone": "America/Argentina/Buenos_Aires",
            "target": receiver.path() + "/a/rather/long/path/that/could/push/the/page/wider",
        }
    )
    dying = takt_local.create_job(
        {
            "name": "always-failing",
            "interval": "1h",
            "target": receiver.path(first=[Reply(500)]),
            "retry": {"max_attempts": 1},
        }
    )
    run = takt_local.request("POST", f"/v1/jobs/{dying['id']}/trigger").body
    poll(lambda: takt_local.execution(run["id"])["state"], lambda s: s == "dead", 20, "a dead run")
    ran = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger").body  # ends with no error
    poll(lambda: takt_local.execution(ran["id"])["state"], lambda s: s == "succeeded", 20, "a run")

    with console_page(browser, takt_local.url, viewport=PHONE) as page:
        page.goto("/#/jobs")
        row = page.locator("tbody tr").filter(has_text=long_name)
        expect(row).to_be_visible()
        expect(page.locator("thead")).to_be_hidden()  # each row is a card, its cells labelled
        expect(row.locator("td[data-label='schedule']")).to_contain_text("*/5 * * * *")
        assert sideways(page) == 0
        screenshot(page, "jobs-phone")

        for path, ready in [
            (
                f"/#/jobs/{job['id']}",
                page.get_by_role("region", name="Executions").locator("tbody tr"),
            ),
            (
                f"/#/jobs/{dying['id']}",
                page.get_by_role("region", name="Executions").locator("tbody tr"),
            ),
            ("/#/dead", page.get_by_role("link", name="always-failing")),
            (
                f"/#/executions/{run['id']}",
                page.get_by_role("region", name="Attempts").locator("tbody tr"),
            ),
            (
                "/",
                page.locator("section", has_text="Failing jobs").get_by_role(
                    "link", name="always-failing"
                ),
            ),
        ]:
            page.goto(path)
            expect(ready.first).to_be_visible()
            assert sideways(page) == 0, path
            broken = page.evaluate(
                """[...document.querySelectorAll("td .ago")]
                    .filter((s) => s.getClientRects().length > 1).length"""
            )
            assert broken == 0, f"a time's '(13 min ago)' must not break across lines on {path}"
            bare = page.evaluate(
                """[...document.querySelectorAll("td[data-label]")]
                    .filter((td) => td.offsetHeight && !td.textContent.trim()).length"""
            )
            assert bare == 0, f"a card must not show a label with no value on {path}"
        ticks = page.evaluate(
            """[...document.querySelectorAll(".chart .tick")]
                .map((t) => t.getBoundingClientRect().height)"""
        )
        assert ticks and min(ticks) >= 9, f"a chart's ticks must be readable on a phone: {ticks} px"
        screenshot(page, "overview-phone")
        page.goto(f"/#/jobs/{dying['id']}")
        expect(page.get_by_role("region", name="Executions").locator("tbody tr")).to_have_count(1)
        screenshot(page, "job-phone")
        page.get_by_role("group", name="Job actions").get_by_role("button", name="Edit").click()
        expect(page.get_by_role("dialog", name="Edit job")).to_be_visible()
        assert sideways(page) == 0
        screenshot(page, "job-edit-phone")


def overrun(page: Page, selector: str) -> float:
    """How far the first `selector` in the page's main column reaches past the column's toolbar
    (its header row, which spans the column's width): 0 or less when it stays inside."""
    reach: float = page.evaluate(
        """(selector) => document.querySelector(`main ${selector}`).getBoundingClientRect().right
            - document.querySelector("main .toolbar").getBoundingClientRect().right""",
        selector,
    )
    return reach


def test_the_jobs_table_stays_within_its_header_at_1280_px(
    browser: Browser, takt_local: LocalTakt, receiver: Receiver
) -> None:
    """Two instants in local time per row and a name with no hyphen to break at once made the
    table run past the toolbar above it (33 px in issue 29's screenshot)."""
    job = takt_local.create_job(
        {
            "name": "nightly_warehouse_export_to_reporting",
            "interval": "1h",
            "target": receiver.path(),
        }
    )
    run = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger").body
    poll(lambda: takt_local.execution(run["id"])["state"], lambda s: s == "succeeded", 20, "a run")
    with console_page(browser, takt_local.url, timezone_id="Asia/Kolkata") as page:
        page.goto("/#/jobs")
        row = page.locator("tbody tr").filter(has_text="nightly_warehouse_export_to_reporting")
        expect(row.locator("time")).to_have_count(2)
        show_local_times(page)
        expect(row.locator("time").first).to_contain_text("UTC+05:30")
        reach = overrun(page, "table")
        assert reach <= 0, f"the jobs table must stay within its header: {reach} px past it"
        screenshot(page, "jobs-wide-local")


def test_a_workflow_graph_shows_all_five_tasks_on_a_phone(
    browser: Browser, takt_local: LocalTakt, receiver: Receiver
) -> None:
    """Drawn a column per depth, five tasks were 830 px wide: on a phone two of them were out of
    sight in a scroll box with no hint. Each task's box must lie inside the graph's panel."""
    deps = {
        "extract": [],
        "clean": ["extract"],
        "load-a": ["clean"],
        "load-b": ["clean"],
        "report": ["load-a", "load-b"],
    }
    job = takt_local.create_job(
        {
            "name": "five-task-flow",
            "interval": "1d",
            "tasks": [
                {"id": t, "target": receiver.path(), "depends_on": d} for t, d in deps.items()
            ],
        }
    )
    with console_page(browser, takt_local.url, viewport=PHONE) as page:
        page.goto(f"/#/jobs/{job['id']}")
        graph = page.get_by_role("img", name="Workflow graph: 5 tasks")
        expect(graph.locator("g.node")).to_have_count(5)
        panel = page.locator(".run-graph").bounding_box()
        assert panel is not None
        for task in deps:
            box = graph.locator(f"g.node[data-task='{task}'] rect").bounding_box()
            assert box is not None
            assert (
                panel["x"] <= box["x"] and box["x"] + box["width"] <= panel["x"] + panel["width"]
            ), f"every task of a workflow graph must be in sight on a phone: {task} at {box}"
        assert sideways(page) == 0
        screenshot(page, "workflow-graph-phone")


def test_next_runs_name_the_jobs_own_clock_only_where_it_tells_them_apart(
    browser: Browser, takt_local: LocalTakt, receiver: Receiver
) -> None:
    """In local time a 10-second interval's next runs each read "· 07:50 in UTC": an interval
    follows no zone's clock, and a cron with a seconds field needs its seconds to tell its runs
    apart."""
    every = takt_local.create_job(
        {"name": "every-ten-seconds", "interval": "10s", "target": receiver.path()}
    )
    cron = takt_local.create_job(
        {
            "name": "cron-ten-seconds",
            "schedule": "*/10 * * * * *",
            "time_zone": "Europe/Berlin",
            "target": receiver.path(),
        }
    )
    for job in (every, cron):
        takt_local.request("PATCH", f"/v1/jobs/{job['id']}", {"status": "paused"})
    with console_page(browser, takt_local.url, timezone_id="Asia/Kolkata") as page:
        page.goto(f"/#/jobs/{every['id']}")
        runs = page.get_by_role("region", name="Schedule").get_by_role("listitem")
        expect(runs).to_have_count(5)
        show_local_times(page)
        expect(runs.first).to_contain_text("UTC+05:30")
        texts = runs.all_inner_texts()
        assert not any(" in UTC" in text for text in texts), (
            f"an interval's next runs must name no zone's clock: {texts}"
        )
        screenshot(page, "interval-next-runs-local")

        page.goto(f"/#/jobs/{cron['id']}")
        expect(page.get_by_role("heading", level=1)).to_contain_text("cron-ten-seconds")
        expect(runs).to_have_count(5)
        clocks = [text.split(" · ")[1] for text in runs.all_inner_texts()]
        assert len(set(clocks)) == 5, f"each next run must read its own job-zone clock: {clocks}"
        assert all(c.endswith(" in Europe/Berlin") for c in clocks), clocks
