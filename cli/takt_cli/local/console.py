"""Serving the web console's static files from the local runtime.

The console is plain HTML, CSS and JavaScript modules with no build step, so serving it is
reading files: a GET of `/` is `index.html`, any other path is the file at that path under the
console folder. Paths are resolved and must stay inside the folder, so `..` or a symlink cannot
read anything else on the machine. A path no file can have (a NUL byte, a name longer than the
file system takes) names no file: it is answered 404 like any other, never with an error.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Python's table lacks these on some systems, and a module script served as text/plain is
# refused by the browser.
_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css"}


def default_console_dir() -> Path | None:
    """The repository's `console/` folder when takt runs from a checkout, else the copy an
    installed wheel carries (pyproject.toml's force-include)."""
    here = Path(__file__).resolve()
    for folder in (here.parents[3] / "console", here.parents[1] / "console"):
        if (folder / "index.html").is_file():
            return folder
    return None


@dataclass(frozen=True)
class StaticFile:
    content_type: str
    body: bytes


class ConsoleFiles:
    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    def get(self, target: str) -> StaticFile | None:
        """The file a GET of `target` (path and query) names, or None when there is none."""
        path = unquote(urlsplit(target).path)
        if "\x00" in path:
            return None
        relative = path.lstrip("/") or "index.html"
        try:
            candidate = (self._root / relative).resolve()
            if not candidate.is_relative_to(self._root) or not candidate.is_file():
                return None
        except OSError:
            # ENAMETOOLONG and its kind: the operating system's word that no such file exists.
            return None
        content_type = _TYPES.get(candidate.suffix) or (
            mimetypes.guess_type(candidate.name)[0] or "application/octet-stream"
        )
        if content_type.startswith("text/") or content_type == "application/json":
            content_type += "; charset=utf-8"
        return StaticFile(content_type, candidate.read_bytes())
