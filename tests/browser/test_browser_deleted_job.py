"""A deleted job's history in the console (issue 29: it opened only by id): a name search lists
the deleted jobs that had the name, and a deleted job's page (where its executions' links lead)
shows its executions instead of an error."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import screenshot
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (the dev group has it)"
).expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def _deleted_job_with_a_run(takt_local: LocalTakt, receiver: Receiver, name: str) -> str:
    """A job named `name` that ran once and was then deleted: its id."""
    job = takt_local.create_job({"name": name, "interval": "1h", "target": receiver.path()})
    triggered = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger")
    assert triggered.status == 202, triggered.body
    poll(
        lambda: takt_local.execution(triggered.body["id"]),
        lambda e: e["state"] == "succeeded",
        30,
        "the triggered execution to succeed",
    )
    takt_local.delete_job(job["id"])
    return str(job["id"])


def test_a_deleted_job_is_found_by_the_name_it_had_and_its_page_shows_its_history(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    name = f"gone-{uuid.uuid4().hex[:6]}"
    job_id = _deleted_job_with_a_run(takt_local, receiver, name)

    page.goto("/#/jobs")
    page.get_by_role("searchbox", name="Search by name").fill(name)
    deleted = page.get_by_role("region", name="Deleted jobs")
    link = deleted.get_by_role("link", name=name)
    found = "a deleted job's history is found by the name it had"
    expect(link, found).to_have_attribute("href", f"#/jobs/{job_id}")
    expect(
        page.get_by_text("No job matches."), "a deleted job is not among the jobs"
    ).to_be_visible()
    screenshot(page, "jobs-deleted-by-name")
    link.click()

    expect(page.get_by_role("heading", level=1), found).to_contain_text("deleted")
    executions = page.get_by_role("region", name="Executions")
    expect(executions.locator("tbody tr"), found).to_have_count(1)
    expect(executions.locator("tbody tr").first).to_contain_text("succeeded")
    expect(
        page.get_by_role("group", name="Job actions"), "a deleted job has no actions"
    ).to_have_count(0)
    screenshot(page, "job-deleted")
