"""An execution's page links each attempt's logs where the API gives them (issue 29: the API and
CLI showed a container attempt's CloudWatch Logs link, the console did not). The link is safe:
only an http(s) address becomes a link, opened with rel="noopener"; anything else is text.

`takt local` runs no containers (no ECS), so the execution is a real one of an HTTP job, and its
API answer gets, on the way to the page, the `logs` a container target's attempt carries."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import console_page, screenshot
from tests.browser.test_browser_layout import PHONE, sideways
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Route

expect = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (the dev group has it)"
).expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

LOGS = (
    "https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1"
    "#logsV2:log-groups/log-group/takt-containers/log-events/takt$252Ftask$252Fabc123"
)


def _with_logs(logs: str) -> Callable[[Route], None]:
    """The API's own answer for the execution, its attempt carrying `logs`."""

    def answer(route: Route) -> None:
        execution: dict[str, Any] = route.fetch().json()
        execution["attempts"][-1]["logs"] = logs
        route.fulfill(json=execution)

    return answer


def _finished_execution(takt_local: LocalTakt, receiver: Receiver) -> str:
    job = takt_local.create_job({"interval": "1h", "target": receiver.path()})
    triggered = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger")
    assert triggered.status == 202, triggered.body
    execution_id: str = triggered.body["id"]
    poll(
        lambda: takt_local.execution(execution_id),
        lambda e: e["state"] == "succeeded" and bool(e["attempts"]),
        30,
        "the triggered execution to succeed",
    )
    return execution_id


def test_an_attempt_s_logs_are_a_link_that_opens_apart_from_the_console(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    execution_id = _finished_execution(takt_local, receiver)
    page.route(f"**/v1/executions/{execution_id}", _with_logs(LOGS))

    page.goto(f"/#/executions/{execution_id}")

    attempts = page.get_by_role("region", name="Attempts")
    link = attempts.get_by_role("link", name="logs")
    linked = "an attempt's logs are linked from its execution's page"
    expect(link, linked).to_have_attribute("href", LOGS)
    expect(link, "a link out of the console opens with noopener").to_have_attribute(
        "rel", "noopener noreferrer"
    )
    expect(link, linked).to_have_attribute("target", "_blank")
    expect(attempts.locator("th"), linked).to_contain_text(["logs"])
    screenshot(page, "execution-container-logs")


@pytest.mark.parametrize("logs", ["javascript:alert(document.domain)", "not an address"])
def test_logs_that_are_not_an_http_address_are_text_never_a_link(
    page: Page, takt_local: LocalTakt, receiver: Receiver, logs: str
) -> None:
    execution_id = _finished_execution(takt_local, receiver)
    page.route(f"**/v1/executions/{execution_id}", _with_logs(logs))

    page.goto(f"/#/executions/{execution_id}")

    attempts = page.get_by_role("region", name="Attempts")
    only_http = "only an http(s) address becomes a link; anything else is shown as text"
    expect(attempts.locator("td[data-label='logs']"), only_http).to_have_text(logs)
    expect(attempts.get_by_role("link"), only_http).to_have_count(0)


def test_an_execution_without_logs_shows_no_logs_column(
    page: Page, takt_local: LocalTakt, receiver: Receiver
) -> None:
    execution_id = _finished_execution(takt_local, receiver)

    page.goto(f"/#/executions/{execution_id}")

    attempts = page.get_by_role("region", name="Attempts")
    expect(attempts.locator("tbody tr")).to_have_count(1)
    expect(
        attempts.locator("th"), "a logs column only where an attempt has logs"
    ).not_to_contain_text(["logs"])


def test_an_attempt_s_logs_link_fits_a_phone(
    browser: Browser, takt_local: LocalTakt, receiver: Receiver
) -> None:
    execution_id = _finished_execution(takt_local, receiver)

    with console_page(browser, takt_local.url, viewport=PHONE) as page:
        page.route(f"**/v1/executions/{execution_id}", _with_logs(LOGS))
        page.goto(f"/#/executions/{execution_id}")
        link = page.get_by_role("region", name="Attempts").get_by_role("link", name="logs")
        expect(link, "an attempt's logs are linked on a phone too").to_be_visible()
        assert sideways(page) == 0, "the attempts card with its logs link fits a phone's width"
        screenshot(page, "execution-container-logs-phone")
