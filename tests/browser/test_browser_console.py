"""A person's way through the console: create a job from the page and watch its runs appear,
pause it, and re-run a dead execution from the dead-letter view; every main page renders."""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import screenshot
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver, Reply

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (the dev group has it)"
).expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def confirm(page: Page, action: str) -> None:
    """Answer the console's confirmation dialog with its `action` button."""
    dialog = page.locator("#confirm")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name=action, exact=True).click()
    expect(dialog).to_be_hidden()


def test_create_a_job_from_the_page_and_watch_its_runs_appear(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    name = f"report-{uuid.uuid4().hex[:6]}"
    page.goto("/#/jobs")
    page.get_by_role("button", name="New job").click()
    form = page.get_by_role("dialog", name="New job")
    form.get_by_label("Name").fill(name)
    form.get_by_label("Schedule").select_option("interval")
    form.get_by_label("When").fill("2s")
    form.get_by_label("Target URL").fill(receiver.path())
    form.get_by_label("Payload (JSON)").fill('{"report": "daily"}')
    form.get_by_role("button", name="Create job").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text(name)
    schedule = page.get_by_role("region", name="Schedule")
    expect(schedule).to_contain_text("every 2 seconds")
    expect(schedule.get_by_role("listitem")).to_have_count(5)
    runs = page.get_by_role("region", name="Recent executions")
    expect(runs.locator(".badge.s-succeeded").first).to_be_visible(timeout=20_000)
    expect(
        runs.get_by_role("list", name="Execution timeline").get_by_role("listitem").first
    ).to_be_visible()
    screenshot(page, "job")

    page.goto("/#/jobs")
    page.get_by_role("searchbox", name="Search by name").fill(name)
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("every 2s")
    screenshot(page, "jobs")


def test_pause_a_job_after_confirming(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job(
        {
            "name": "pausable",
            "schedule": "0 6 * * 1-5",
            "time_zone": "Europe/Berlin",
            "target": receiver.path(),
        }
    )
    page.goto(f"/#/jobs/{job['id']}")
    expect(page.get_by_role("region", name="Schedule")).to_contain_text(
        "at 06:00 on Monday to Friday (Europe/Berlin)"
    )

    page.get_by_role("group", name="Job actions").get_by_role("button", name="Pause").click()
    confirm(page, "Pause")

    expect(page.get_by_role("heading", level=1).locator(".badge")).to_have_text("paused")
    expect(page.get_by_role("heading", name="Next runs if resumed now")).to_be_visible()
    runs = page.get_by_role("region", name="Recent executions")
    expect(runs).to_have_text("Recent executionsNo executions yet.")
    assert takt_local.request("GET", f"/v1/jobs/{job['id']}").body["status"] == "paused"


def test_cancelling_the_confirmation_changes_nothing(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job({"name": "kept", "interval": "1h", "target": receiver.path()})
    page.goto(f"/#/jobs/{job['id']}")

    page.get_by_role("group", name="Job actions").get_by_role("button", name="Delete").click()
    confirm(page, "Cancel")

    expect(page.get_by_role("heading", level=1).locator(".badge")).to_have_text("active")
    assert takt_local.request("GET", f"/v1/jobs/{job['id']}").status == 200


def dead_execution(takt_local: LocalTakt, receiver: Receiver) -> dict[str, Any]:
    """A run whose only attempt fails (its target answers 500 once, then 200)."""
    target = receiver.path(first=[Reply(500)])
    job = takt_local.create_job(
        {"name": "flaky", "interval": "1h", "target": target, "retry": {"max_attempts": 1}}
    )
    run = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger").body
    return poll(
        lambda: takt_local.execution(run["id"]),
        lambda execution: execution["state"] == "dead",
        20,
        "a dead execution",
    )


def test_retry_a_dead_execution_from_the_dead_letter_view(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    dead = dead_execution(takt_local, receiver)
    page.goto("/#/dead")
    select = page.get_by_role("checkbox", name=f"Select {dead['id']}")
    expect(page.locator("tbody tr").filter(has=select)).to_contain_text("HTTP 500")
    screenshot(page, "dead-letters")

    select.check()
    page.get_by_role("button", name="Re-run 1 selected").click()
    confirm(page, "Re-run")

    expect(page.get_by_role("status")).to_contain_text("Re-ran 1 of 1")
    expect(select).to_have_count(0)
    page.goto(f"/#/executions/{dead['id']}")
    expect(page.get_by_role("heading", level=1).locator(".badge")).to_have_text(
        "succeeded", timeout=20_000
    )
    attempts = page.get_by_role("region", name="Attempts").locator("tbody tr")
    expect(attempts).to_have_count(2)
    expect(attempts.first).to_contain_text("500")
    # No error banner once it succeeded, and no absent part drawn as "null".
    expect(page.get_by_role("alert")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("null")
    screenshot(page, "execution")


def test_the_overview_shows_jobs_runs_and_lanes(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job({"name": "counted", "interval": "1h", "target": receiver.path()})
    run = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger").body
    poll(lambda: takt_local.execution(run["id"])["state"], lambda s: s == "succeeded", 20, "a run")

    page.goto("/")

    summary = page.get_by_role("region", name="Summary")
    expect(summary).to_contain_text("active jobs")
    expect(page.get_by_role("img", name="Runs per minute").locator("rect").first).to_be_attached()
    lanes = page.locator("section", has=page.get_by_role("heading", name="Lanes"))
    expect(lanes.locator("tbody tr")).to_have_count(3)
    expect(page.locator("#updated")).to_have_text(re.compile(r"^updated "))
    screenshot(page, "overview")
