"""What each Lambda handler imports at its cold start, as Lambda loads it: its function's folder
first on the path, then the layer's package, in a fresh interpreter. A function imports only what
it runs (takt.wiring builds, and imports, a function's parts when that function first asks for
them): no function but the API imports the API, and the functions that never call a target do
not import the HTTP stack and every target kind."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = sorted(path.parent.name for path in (ROOT / "functions").glob("*/handler.py"))
# The functions that call targets (the worker runs them, the watchdog notifies on a dead run).
CALLS_TARGETS = {"worker", "watchdog"}

PROBE = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import handler
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] == "takt")))
"""


@functools.cache
def takt_modules_at_import(function: str) -> frozenset[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "functions" / function), str(ROOT / "layers")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT / "functions" / function,
    )
    return frozenset(json.loads(done.stdout))


def test_every_function_is_probed() -> None:
    assert set(FUNCTIONS) >= {"api", "worker", "claimer", "scheduler", "watchdog", "indexer"}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_no_function_but_the_api_imports_the_api(function: str) -> None:
    api = {name for name in takt_modules_at_import(function) if name.startswith("takt.api")}
    if function == "api":
        assert "takt.api.app" in api
    else:
        assert not api, f"the {function} function imports the API at its cold start: {sorted(api)}"


@pytest.mark.parametrize("function", sorted(set(FUNCTIONS) - CALLS_TARGETS - {"api"}))
def test_a_function_that_calls_no_target_imports_no_target_kind(function: str) -> None:
    targets = {name for name in takt_modules_at_import(function) if name.startswith("takt.targets")}
    assert not targets, f"the {function} function imports target kinds it never calls: {targets}"
