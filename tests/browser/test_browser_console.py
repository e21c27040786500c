"""A person's way through the console: create a job from the page and watch its runs appear, edit
it (the API's errors beside each field), pause it, page through its executions, re-run a dead
execution from the dead-letter view (jobs named, not numbered), switch times between UTC and the
browser's zone; every main page renders."""

from __future__ import annotations

import re
import uuid
from functools import partial
from typing import TYPE_CHECKING, Any

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

FLAKY = f"flaky-{uuid.uuid4().hex[:6]}"
# One way of writing an instant everywhere: date, time, and the zone it is in.
IN_UTC = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
RELATIVE = r"( \(.+\))?"  # how long ago, where a table or list shows it


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
    form.get_by_label("Target", exact=True).fill(receiver.path())
    form.get_by_label("Payload (JSON)").fill('{"report": "daily"}')
    form.get_by_role("button", name="Create job").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text(name)
    schedule = page.get_by_role("region", name="Schedule")
    expect(schedule).to_contain_text("every 2 seconds")
    expect(schedule.get_by_role("listitem")).to_have_count(5)
    runs = page.get_by_role("region", name="Executions")
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
    runs = page.get_by_role("region", name="Executions")
    expect(runs).to_have_text("ExecutionsNo executions yet.")
    assert takt_local.request("GET", f"/v1/jobs/{job['id']}").body["status"] == "paused"

    page.goto("/#/jobs")
    listed = page.locator("tbody tr").filter(has_text="pausable").locator("td").nth(3)
    rule = "a paused job's row must not count down to a run it will not make"
    expect(listed, rule).to_have_text("none while paused")


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
    """A run whose two attempts fail, a second apart (its target answers 500 twice, then 200)."""
    target = receiver.path(first=[Reply(500), Reply(500)])
    retry = {"max_attempts": 2, "backoff": "fixed", "initial_interval": "1s", "jitter": "none"}
    job = takt_local.create_job({"name": FLAKY, "interval": "1h", "target": target, "retry": retry})
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
    row = page.locator("tbody tr").filter(has=select)
    expect(row).to_contain_text("HTTP 500")
    expect(row.get_by_role("link", name=FLAKY)).to_have_attribute("title", dead["job_id"])
    screenshot(page, "dead-letters")

    select.check()
    page.get_by_role("button", name="Re-run 1 selected").click()
    expect(page.locator("#confirm")).to_contain_text("with the job as it is now")
    confirm(page, "Re-run")

    expect(page.get_by_role("status")).to_contain_text("Re-ran 1 of 1")
    expect(select).to_have_count(0)
    page.goto(f"/#/executions/{dead['id']}")
    expect(page.get_by_role("heading", level=1).locator(".badge")).to_have_text(
        "succeeded", timeout=20_000
    )
    expect(page.locator(".crumbs").get_by_role("link", name=FLAKY)).to_be_visible()
    attempts = page.get_by_role("region", name="Attempts").locator("tbody tr")
    expect(attempts).to_have_count(3)
    expect(attempts.first).to_contain_text("500")
    # No error banner once it succeeded, no absent part drawn as "null", and no retry time
    # left over from its first attempt.
    expect(page.get_by_role("alert")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("null")
    expect(page.locator("main")).not_to_contain_text("retry at")
    screenshot(page, "execution")
    # On the job's page too, the execution that succeeded in the end shows no error.
    page.goto(f"/#/jobs/{dead['job_id']}")
    executions = page.get_by_role("region", name="Executions")
    row = executions.locator("tbody tr").filter(
        has=page.get_by_role("link", name=dead["id"].split(".")[-1])
    )
    expect(row).to_contain_text("succeeded")
    expect(row.locator("td[data-label='error']")).to_have_text("")


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


def test_edit_a_job_with_the_apis_errors_beside_each_field(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    name = f"editable-{uuid.uuid4().hex[:6]}"
    job = takt_local.create_job(
        {"name": name, "interval": "1h", "target": receiver.path(), "payload": {"a": 1}}
    )
    page.goto(f"/#/jobs/{job['id']}")
    page.get_by_role("group", name="Job actions").get_by_role("button", name="Edit").click()
    form = page.get_by_role("dialog", name="Edit job")
    expect(form.get_by_label("Name")).to_have_value(name)
    expect(form.get_by_label("When")).to_have_value("1h")
    expect(form.get_by_label("Payload (JSON)")).to_have_value('{\n  "a": 1\n}')

    zone, attempts, window = (
        form.get_by_label("Time zone"),
        form.get_by_label("Attempts"),
        form.get_by_label("Catch-up window"),
    )
    calendars = form.get_by_label("Calendars")
    zone.fill("Mars/Olympus")
    attempts.fill("0")
    window.fill("soon")
    calendars.fill("holidays, not a name!")
    form.get_by_role("button", name="Save changes").click()
    expect(zone).to_have_accessible_description(re.compile("unknown time zone 'Mars/Olympus'"))
    expect(attempts).to_have_accessible_description(re.compile("greater than or equal to 1"))
    expect(window).to_have_accessible_description(re.compile("invalid interval 'soon'"))
    expect(calendars).to_have_accessible_description(re.compile("should match pattern"))
    for control in (zone, attempts, window, calendars):
        expect(control).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_label("Name")).not_to_have_attribute("aria-invalid", "true")
    screenshot(page, "job-edit-errors")
    assert takt_local.request("GET", f"/v1/jobs/{job['id']}").body["version"] == 1

    renamed = f"{name}-v2"
    form.get_by_label("Name").fill(renamed)
    form.get_by_label("Schedule").select_option("schedule")
    form.get_by_label("When").fill("30 6 * * 1-5")
    zone.fill("Europe/Berlin")
    form.get_by_label("End at").fill("2031-01-01T00:00:00Z")
    form.get_by_label("Skipped hour (DST)").select_option("skip")
    form.get_by_label("Catch-up", exact=True).select_option("all")
    window.fill("2h")
    calendars.fill("")
    form.get_by_label("Spread starts (jitter)").fill("5m")
    form.get_by_label("Payload (JSON)").fill('{"b": [2]}')
    form.get_by_label("Priority").select_option("high")
    form.get_by_label("Timeout (s)").fill("60")
    form.get_by_label("Overlap").select_option("skip")
    attempts.fill("3")
    form.get_by_label("Backoff").select_option("fixed")
    form.get_by_label("First retry after").fill("10s")
    form.get_by_role("button", name="Save changes").click()

    expect(form).to_have_count(0)
    expect(page.get_by_role("heading", level=1)).to_contain_text(renamed)
    expect(page.get_by_role("region", name="Schedule")).to_contain_text(
        "at 06:30 on Monday to Friday (Europe/Berlin; skipped if DST skips its time)"
    )
    expect(page.get_by_role("region", name="Settings")).to_contain_text(
        "3 attempts, fixed backoff from 10s to 1h"
    )
    expect(page.get_by_role("region", name="Settings")).to_contain_text("spread over 5m")
    stored = takt_local.request("GET", f"/v1/jobs/{job['id']}").body
    assert (stored["name"], stored["schedule"], stored["interval"]) == (
        renamed,
        "30 6 * * 1-5",
        None,
    )
    assert (stored["time_zone"], stored["end_at"], stored["dst"]["gap"]) == (
        "Europe/Berlin",
        "2031-01-01T00:00:00Z",
        "skip",
    )
    assert (stored["catchup"], stored["catchup_window"], stored["payload"]) == (
        "all",
        "2h",
        {"b": [2]},
    )
    assert (stored["priority"], stored["timeout_sec"], stored["overlap"]) == ("high", 60, "skip")
    assert stored["retry"] == {
        "max_attempts": 3,
        "backoff": "fixed",
        "initial_interval": "10s",
        "max_interval": "1h",
        "jitter": "full",
    }
    assert (stored["jitter"], stored["calendars"]) == ("5m", None)
    assert (stored["target"], stored["version"]) == (job["target"], 2)
    screenshot(page, "job-edited")


def test_the_new_job_dialog_closes_when_the_page_changes(page: Page) -> None:
    page.goto("/#/dead")
    expect(page.get_by_role("heading", level=1)).to_have_text("Dead letters")
    page.goto("/#/jobs")
    page.get_by_role("button", name="New job").click()
    expect(page.get_by_role("dialog", name="New job")).to_be_visible()

    page.go_back()

    expect(page.get_by_role("heading", level=1)).to_have_text("Dead letters")
    expect(page.locator("dialog[open]")).to_have_count(0)
    page.get_by_role("link", name="Jobs", exact=True).click()  # nothing modal blocks the page
    expect(page.get_by_role("heading", level=1)).to_have_text("Jobs")


def test_a_jobs_executions_are_paged_newest_first(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job({"name": "busy", "interval": "1d", "target": receiver.path()})
    triggered = [
        takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger").body["id"] for _ in range(23)
    ]
    total = len(takt_local.executions(job["id"]))
    page.goto(f"/#/jobs/{job['id']}")
    history = page.get_by_role("region", name="Executions")
    rows = history.locator("tbody tr")
    pages = history.get_by_role("navigation", name="Execution pages")
    newer, older = (
        pages.get_by_role("button", name="Newer"),
        pages.get_by_role("button", name="Older"),
    )

    expect(rows).to_have_count(20)
    expect(rows.locator(f"a[href='#/executions/{triggered[-1]}']")).to_be_visible()
    expect(newer).to_be_disabled()
    older.click()
    expect(pages).to_contain_text("page 2")
    expect(rows).to_have_count(total - 20)
    expect(rows.locator(f"a[href='#/executions/{triggered[0]}']")).to_be_visible()
    expect(older).to_be_disabled()
    screenshot(page, "job-executions-page-2")
    newer.click()
    expect(rows).to_have_count(20)
    expect(pages).to_contain_text("page 1")


def test_times_show_their_zone_and_switch_between_utc_and_local(
    browser: Browser, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job(
        {"name": "once", "run_at": "2030-01-01T09:00:00Z", "target": receiver.path()}
    )
    with console_page(browser, takt_local.url, timezone_id="Asia/Kolkata") as page:
        page.goto(f"/#/jobs/{job['id']}")
        next_run = page.get_by_role("region", name="Schedule").get_by_role("listitem").first
        expect(next_run).to_contain_text("2030-01-01 09:00:00 UTC")
        times = page.locator("main time")
        expect(times.first).to_be_visible()
        for text in times.all_inner_texts():
            assert re.fullmatch(IN_UTC + RELATIVE, text), text
        schedule = page.get_by_role("region", name="Schedule")
        expect(schedule).to_contain_text("once at 2030-01-01 09:00:00 UTC")
        expect(schedule).not_to_contain_text("T09:00")  # no ISO 8601 beside the one format

        page.get_by_role("group", name="Show times in").get_by_role("button", name="Local").click()
        expect(next_run).to_contain_text("2030-01-01 14:30:00 UTC+05:30")
        expect(page.locator("#updated")).to_have_text(re.compile(r"UTC\+05:30$"))
        for text in times.all_inner_texts():
            assert re.fullmatch(IN_UTC + r"\+05:30" + RELATIVE, text), text
        screenshot(page, "times-local")

        page.reload()  # the choice is remembered
        expect(next_run).to_contain_text("2030-01-01 14:30:00 UTC+05:30")
        local = page.get_by_role("button", name="Local")
        expect(local).to_have_attribute("aria-pressed", "true")


def test_fix_a_job_then_re_run_its_dead_executions_from_its_page(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    broken = receiver.path(then=Reply(500))
    job = takt_local.create_job(
        {"name": "fixable", "interval": "1d", "target": broken, "retry": {"max_attempts": 1}}
    )
    runs = [takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger").body for _ in range(2)]
    for run in runs:
        poll(partial(takt_local.execution, run["id"]), lambda e: e["state"] == "dead", 20, "dead")
    fixed = receiver.path()
    takt_local.request("PATCH", f"/v1/jobs/{job['id']}", {"target": fixed})

    # "As it ran" re-sends the snapshot: the old, broken target again.
    page.goto(f"/#/executions/{runs[0]['id']}")
    page.get_by_role("group", name="Execution actions").get_by_role("button", name="Retry").click()
    page.locator("#confirm").get_by_role("checkbox", name=re.compile("^As it ran")).check()
    confirm(page, "Retry")
    expect(page.get_by_role("region", name="Attempts").locator("tbody tr")).to_have_count(
        2, timeout=20_000
    )
    assert len(receiver.hits(broken)) == 3

    page.goto(f"/#/jobs/{job['id']}")
    page.get_by_role("group", name="Job actions").get_by_role(
        "button", name="Re-run dead executions"
    ).click()
    dialog = page.locator("#confirm")
    expect(dialog).to_contain_text("with its job as it is now")
    expect(dialog.get_by_role("checkbox", name=re.compile("^As it ran"))).not_to_be_checked()
    confirm(page, "Re-run dead executions")

    expect(page.get_by_role("status")).to_contain_text("Re-ran 2")
    badges = page.get_by_role("region", name="Executions").locator("tbody .badge")
    expect(badges.filter(has_text="succeeded")).to_have_count(2, timeout=20_000)
    assert len(receiver.hits(fixed)) == 2
    assert len(receiver.hits(broken)) == 3  # none since the default re-run


def test_an_edit_never_overwrites_a_change_made_meanwhile(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job({"name": "contested", "interval": "1h", "target": receiver.path()})
    page.goto(f"/#/jobs/{job['id']}")
    page.get_by_role("group", name="Job actions").get_by_role("button", name="Edit").click()
    form = page.get_by_role("dialog", name="Edit job")
    form.get_by_label("When").fill("2h")
    takt_local.request("PATCH", f"/v1/jobs/{job['id']}", {"priority": "low"})

    form.get_by_role("button", name="Save changes").click()

    expect(form.get_by_role("alert")).to_contain_text("version 2, not 1")
    stored = takt_local.request("GET", f"/v1/jobs/{job['id']}").body
    assert (stored["interval"], stored["priority"]) == ("1h", "low")
