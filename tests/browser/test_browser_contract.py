"""The console's job form follows the API's contract (issue 30: a new job field reaches the form
with no edit to it): a field the served OpenAPI document adds gets a control, its value is sent,
and the API's answer about it is shown beside it; a job's page shows such fields too."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import screenshot
from tests.e2e.harness import LocalTakt
from tests.e2e.receiver import Receiver

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (the dev group has it)"
).expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

ADDED = {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "a page about the job"}


def _with_a_new_field(route: Route) -> None:
    """The API's own document, with a field its models do not have (yet)."""
    document: dict[str, Any] = route.fetch().json()
    document["components"]["schemas"]["JobCreate"]["properties"]["description_url"] = ADDED
    route.fulfill(json=document)


def test_a_field_the_contract_adds_is_in_the_form_and_sent(page: Page, receiver: Receiver) -> None:
    page.route("**/v1/openapi.json", _with_a_new_field)
    page.goto("/#/jobs")
    page.get_by_role("button", name="New job").click()
    form = page.get_by_role("dialog", name="New job")
    form.get_by_label("When").fill("1h")
    form.get_by_label("Target", exact=True).fill(receiver.path())
    added = form.get_by_label("Description url")
    added.fill("https://docs.example/report")

    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/v1/jobs")) as sent:
        form.get_by_role("button", name="Create job").click()

    body = json.loads(sent.value.post_data or "{}")
    assert body["description_url"] == "https://docs.example/report", (
        "a field added to the API's contract reaches the console's form with no edit to it"
    )
    # The API (whose models lack the field) refuses it: its answer is shown beside the field.
    expect(added).to_have_attribute("aria-invalid", "true")
    screenshot(page, "job-new-contract-field")


def test_a_job_s_page_shows_the_fields_its_form_shows_under_more(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    job = takt_local.create_job(
        {"interval": "1h", "target": receiver.path(), "notify": {"to": "https://n.example/hook"}}
    )

    page.goto(f"/#/jobs/{job['id']}")

    settings = page.get_by_role("region", name="Settings")
    expect(settings).to_contain_text("https://n.example/hook")
    screenshot(page, "job-settings-more")
