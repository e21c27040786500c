"""The console in a real headless browser: Debian's chromium, driven by Playwright, against a
real `takt local` subprocess.

Playwright's own browser builds are not used (nothing is downloaded): the tests launch the
system's `chromium`, and skip, saying why, when it or the `playwright` package is missing. Each
test saves a screenshot of the page it checked in `test-artifacts/console/`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.harness import LocalTakt
from tests.e2e.receiver import Receiver

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "console"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def takt_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTakt]:
    runtime = LocalTakt.start(tmp_path_factory.mktemp("takt-local") / "takt-local.log")
    try:
        yield runtime
    finally:
        runtime.stop()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    target = Receiver().start()
    try:
        yield target
    finally:
        target.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).is_file():
        pytest.skip("no chromium to drive: apt-get install -y chromium")
    try:
        from playwright.sync_api import expect, sync_playwright  # noqa: PLC0415 - playwright loads only for browser tests
    except ImportError:
        pytest.skip("the playwright package is not installed (the dev group has it)")

    # The suite runs beside other work on a small machine: under a full `-n auto` run the
    # runtime answers slowly (a 15 s limit was once missed). These are deadlines to poll
    # against, not waits.
    expect.set_options(timeout=30_000)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def console_page(browser: Browser, url: str, **options: Any) -> Iterator[Page]:
    """A fresh page at the console (a new context: its own storage, viewport, zone and locale,
    which `options` may set); a script error on it fails the test."""
    settings: dict[str, Any] = {"viewport": {"width": 1280, "height": 860}, "locale": "en-GB"}
    context = browser.new_context(base_url=url, **{**settings, **options})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.set_default_timeout(30_000)
    try:
        yield opened
    finally:
        context.close()
    assert errors == [], f"script errors on the page: {errors}"


@pytest.fixture
def page(browser: Browser, takt_local: LocalTakt) -> Iterator[Page]:
    with console_page(browser, takt_local.url) as opened:
        yield opened


def screenshot(page: Page, name: str) -> None:
    """Save the whole page as test-artifacts/console/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
