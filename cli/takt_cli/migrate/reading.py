"""Reading an import's source within bounds: its size, its nesting, and what YAML aliases expand
to, checked before anything builds it, so a hostile file is refused in one line instead of
exhausting memory, the stack or the clock.

- The whole file is at most `MAX_SOURCE_BYTES` (a CronJob manifest is a few KB, an EventBridge
  schedule under one; `takt import` reads it into memory once).
- JSON and YAML nest at most `MAX_DEPTH` levels: parsers build nested values recursively, and a
  file nested 100,000 deep ended in a RecursionError. Kubernetes objects nest about 15 levels.
- A YAML file expands to at most `MAX_NODES` values, each alias counted at the size of what it
  names. PyYAML shares an aliased value instead of copying it, so a 744-byte file of nested
  aliases loads at once, but everything that walks it (validation, JSON) expands it: a billion
  laughs grew past 2.7 GB. Counted as the parser's events go by, the expansion is known before
  anything is built.

Each bound is checked in one pass over the text (`yaml.parse` and a bracket count run without
recursion), so reading costs time linear in the file's size, and `MAX_SOURCE_BYTES` bounds that.
"""

from __future__ import annotations

from typing import Any

import yaml

from takt.api.admission import depth_of
from takt_cli.migrate.model import MappingError

MAX_SOURCE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
# About 20,000 CronJob manifests of 50 values each.
MAX_NODES = 1_000_000
# Safe (no arbitrary objects), and libyaml's C parser where it is installed: the check's events
# and the documents come from the same parser.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_size(data: bytes, name: str) -> None:
    """Refuse a source of more than `MAX_SOURCE_BYTES` (given at most one byte more of it)."""
    if len(data) > MAX_SOURCE_BYTES:
        raise MappingError(f"{name} is over {MAX_SOURCE_BYTES} bytes")


def check_json_depth(text: str, what: str) -> None:
    """Refuse JSON `text` nested deeper than `MAX_DEPTH` before a recursive parser meets it."""
    if depth_of(text) > MAX_DEPTH:
        raise MappingError(f"{what} is nested more than {MAX_DEPTH} levels deep")


def yaml_documents(text: str) -> list[Any]:
    """The documents of YAML `text` (empty ones left out), once its nesting and its expansion
    are known to be within bounds; MappingError otherwise, or when it is not YAML."""
    try:
        _check_yaml_events(text)
        return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
    except yaml.YAMLError as exc:
        raise MappingError("not YAML: " + " ".join(str(exc).split())) from None


def _check_yaml_events(text: str) -> None:
    """Walk the parser's events: the open collections' expanded sizes on a stack, each anchor's
    expanded size once its node ends, and the file's running total of values."""
    open_sizes: list[int] = []
    open_anchors: list[str | None] = []
    anchored: dict[str, int] = {}
    total = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_sizes) >= MAX_DEPTH:
                raise MappingError(f"YAML nested more than {MAX_DEPTH} levels deep")
            open_sizes.append(1)
            open_anchors.append(event.anchor)
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            size = open_sizes.pop()
            anchor = open_anchors.pop()
            if anchor is not None:
                anchored[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                anchored[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            # An alias to an anchor not yet closed (a recursive structure) counts as one: the
            # loader refuses it or builds a cycle, which the mapping then meets once.
            size = anchored.get(event.anchor or "", 1)
        else:
            continue
        if open_sizes:
            open_sizes[-1] += size
        else:
            total += size
        if total + sum(open_sizes) > MAX_NODES:
            raise MappingError(
                f"YAML expands to more than {MAX_NODES} values (aliases counted at their size)"
            )
