"""A job's backfills in the console: the job's page shows each backfill still running (its
range, progress and parallelism, as `takt jobs get` does) and cancels one after a confirmation.

The target answers each call after a delay and the backfill runs one occurrence at a time, so it is
still in progress, for far longer than the page needs, when the page loads; this module has its own
`takt local` so that slow target holds none of the other modules' workers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import screenshot
from tests.e2e.harness import LocalTakt
from tests.e2e.receiver import Receiver, Reply

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (the dev group has it)"
).expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

# Twelve hourly occurrences, each answered after SLOW_SEC: at least two minutes of backfill.
FROM, TO, TOTAL = "2026-11-01T00:00:00Z", "2026-11-01T11:00:00Z", 12
SLOW_SEC = 10.0


def test_a_running_backfill_is_shown_and_cancelled_from_the_jobs_page(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job(
        {
            "name": "backfilled",
            "schedule": "0 * * * *",
            "target": receiver.path(then=Reply(delay_sec=SLOW_SEC)),
        }
    )
    started = takt_local.request(
        "POST", f"/v1/jobs/{job['id']}/backfill", {"from": FROM, "to": TO, "max_parallel": 1}
    )
    assert started.status == 202, started.body
    backfill = started.body["id"]

    page.goto(f"/#/jobs/{job['id']}")
    section = page.get_by_role("region", name="Backfills")
    row = section.locator(f"tr[data-backfill='{backfill}']")
    expect(row).to_be_visible()
    expect(row).to_contain_text("running")
    expect(row).to_contain_text("2026-11-01 00:00:00 UTC to 2026-11-01 11:00:00 UTC")
    expect(row).to_contain_text(re.compile(rf"\d+ of {TOTAL} done, 1 running"))
    expect(row.get_by_role("progressbar", name=f"{backfill} progress")).to_have_attribute(
        "max", str(TOTAL)
    )
    expect(row.locator("td[data-label='max parallel']")).to_have_text("1")
    # The backfilled run started weeks after its time: its lag reads in days, not seconds.
    executions = page.get_by_role("region", name="Executions")
    lag = executions.locator("td[data-label='lag']").first
    expect(lag).to_have_text(re.compile(r"^\d+\.\d d$"))
    table = section.locator("table").bounding_box()
    panel = section.bounding_box()
    assert table is not None and panel is not None
    assert table["x"] + table["width"] <= panel["x"] + panel["width"], (table, panel)
    screenshot(page, "job-backfill")

    row.get_by_role("button", name="Cancel").click()
    dialog = page.locator("#confirm")
    expect(dialog).to_contain_text(f"Cancel backfill {backfill}?")
    dialog.get_by_role("button", name="Cancel backfill", exact=True).click()
    expect(section).to_have_count(0)

    answer = takt_local.request("GET", f"/v1/jobs/{job['id']}/backfills/{backfill}")
    assert answer.status == 200
    assert answer.body["state"] == "cancelled"


def test_the_jobs_page_shows_its_jitter_pause_end_calendars_and_when_each_run_fires(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    """The settings `takt jobs get` shows, and each next run's jittered firing beside its time."""
    created = takt_local.request(
        "POST", "/v1/calendars", {"name": "freeze", "holidays": ["2099-12-25"]}
    )
    assert created.status == 201, created.body
    job = takt_local.create_job(
        {
            "name": "spread",
            "schedule": "0 9 * * *",
            "time_zone": "Europe/Berlin",
            "jitter": "15m",
            "pause_until": "2099-01-01T00:00:00Z",
            "calendars": ["freeze"],
            "target": receiver.path(),
        }
    )
    preview = takt_local.request("GET", f"/v1/jobs/{job['id']}/preview?count=5").body

    page.goto(f"/#/jobs/{job['id']}")

    settings = page.get_by_role("region", name="Settings")
    expect(settings).to_contain_text("jitter" + "each start spread over 15m")
    expect(settings).to_contain_text("paused until2099-01-01")
    expect(settings).to_contain_text("calendarsfreeze")
    fires = page.get_by_role("region", name="Schedule").locator(".next-runs .fires time")
    expect(fires).to_have_count(len(preview["next_runs"]))
    shown = [fires.nth(i).get_attribute("datetime") for i in range(fires.count())]
    assert shown == [run["fires_at"] for run in preview["next_runs"]]
    assert all(run["fires_at"] != run["at"] for run in preview["next_runs"])
