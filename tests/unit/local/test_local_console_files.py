"""The local runtime's static file serving for the console: the right file with the right type,
and nothing outside the console folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from takt_cli.local.console import ConsoleFiles, default_console_dir


@pytest.fixture
def site(tmp_path: Path) -> ConsoleFiles:
    root = tmp_path / "console"
    (root / "js").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>t</title>")
    (root / "js" / "main.js").write_text("export {};")
    (root / "style.css").write_text("body {}")
    (tmp_path / "secret.txt").write_text("not for the browser")
    return ConsoleFiles(root)


def test_the_root_is_index_html(site: ConsoleFiles) -> None:
    found = site.get("/")

    assert found is not None
    assert found.content_type == "text/html; charset=utf-8"
    assert found.body.startswith(b"<!doctype html>")


def test_modules_are_served_as_javascript(site: ConsoleFiles) -> None:
    found = site.get("/js/main.js")

    assert found is not None
    assert found.content_type == "text/javascript; charset=utf-8"


def test_the_query_string_is_ignored(site: ConsoleFiles) -> None:
    found = site.get("/style.css?v=2")

    assert found is not None
    assert found.content_type == "text/css; charset=utf-8"


@pytest.mark.parametrize("path", ["/../secret.txt", "/%2e%2e/secret.txt", "/js/../../secret.txt"])
def test_nothing_outside_the_console_folder_is_served(site: ConsoleFiles, path: str) -> None:
    assert site.get(path) is None


def test_a_missing_file_or_a_folder_is_none(site: ConsoleFiles) -> None:
    assert site.get("/nothing.js") is None
    assert site.get("/js") is None


def test_the_repository_console_is_found() -> None:
    folder = default_console_dir()

    assert folder is not None
    assert (folder / "js" / "main.js").is_file()


@pytest.mark.parametrize(
    "path",
    ["/index.html%00.js", "/%00", "/" + "a" * 5000, "/" + "a/" * 3000],
    ids=["nul byte", "only a nul byte", "a 5,000-character name", "3,000 folders deep"],
)
def test_a_path_no_file_can_have_is_none_so_the_console_answers_404(
    site: ConsoleFiles, path: str
) -> None:
    assert site.get(path) is None, f"a path no file can have is a 404, not an error: {path[:40]}"
