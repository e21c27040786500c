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

    with console_page(browser, takt_local.url, viewport=PHONE) as page:
        page.goto("/#/jobs")
        row = page.locator("tbody tr").filter(has_text=long_name)
        expect(row).to_be_visible()
        expect(page.locator("thead")).to_be_hidden()  # each row is a card, its cells labelled
        expect(row.locator("td[data-label='schedule']")).to_contain_text("*/5 * * * *")
        assert sideways(page) == 0
        screenshot(page, "jobs-phone")

        for path, ready in [
            (f"/#/jobs/{job['id']}", page.get_by_role("region", name="Settings")),
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
        screenshot(page, "overview-phone")
        page.goto(f"/#/jobs/{dying['id']}")
        expect(page.get_by_role("region", name="Executions").locator("tbody tr")).to_have_count(1)
        screenshot(page, "job-phone")
        page.get_by_role("group", name="Job actions").get_by_role("button", name="Edit").click()
        expect(page.get_by_role("dialog", name="Edit job")).to_be_visible()
        assert sideways(page) == 0
        screenshot(page, "job-edit-phone")
