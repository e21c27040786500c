"""What each Lambda handler imports at its cold start, as Lambda loads it: its function's folder
first on the path, then the layer's package, in a fresh interpreter. A function imports only what
it runs (takt.wiring builds, and imports, a function's parts when that function first asks for
them): no function but the API imports the API, and the functions that never call a target do
not import the HTTP stack and every target kind. Nor does any build an AWS client at import: its
clients are built when it first runs (a client loads its service's model, tens of milliseconds).
The interpreter gets the variables Lambda sets that an import reads, as bench/cold_start.py does:
outside Lambda the X-Ray SDK builds a client of its own at import, which in Lambda it does not."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = sorted(path.parent.name for path in (ROOT / "functions").glob("*/handler.py"))
# The functions that call targets (the worker runs them, the watchdog notifies on a dead run).
CALLS_TARGETS = {"worker", "watchdog"}

PROBE = """
import gc, json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import handler
from botocore.client import BaseClient
print(json.dumps({
    "takt": sorted(name for name in sys.modules if name.split(".")[0] == "takt"),
    "clients": sorted(type(o).__name__ for o in gc.get_objects() if isinstance(o, BaseClient)),
}))
"""


@functools.cache
def at_import(function: str) -> dict[str, list[str]]:
    """The takt modules and the AWS clients a function's handler has once imported, as Lambda
    imports it."""
    task = ROOT / "functions" / function
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(task), str(ROOT / "layers")],
        capture_output=True,
        text=True,
        check=True,
        cwd=task,
        env={
            **os.environ,
            "AWS_REGION": "us-east-1",
            "AWS_LAMBDA_FUNCTION_NAME": f"takt-{function}",
            "LAMBDA_TASK_ROOT": str(task),
        },
    )
    probed: dict[str, list[str]] = json.loads(done.stdout)
    return probed


def takt_modules_at_import(function: str) -> frozenset[str]:
    return frozenset(at_import(function)["takt"])


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


@pytest.mark.parametrize("function", FUNCTIONS)
def test_no_function_builds_an_aws_client_at_its_cold_start(function: str) -> None:
    clients = at_import(function)["clients"]
    assert clients == [], (
        f"cold start: the {function} function builds AWS clients at import, not when it first "
        f"runs: {clients}"
    )
