"""Schemathesis against a real `takt local`: every check, every phase (stateful included), over
the OpenAPI document the API serves, bounded in examples, time and seed.

`tests/e2e/schemathesis.toml` says which checks run where (all of them, but for one check on the
two job bodies, and why); `tests/e2e/schemathesis_hooks.py` gives values of takt's own string
formats. Each failure schemathesis finds fails this test with its report.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.harness import ROOT, LocalTakt
from tests.support.env import checkout_pythonpath

pytestmark = pytest.mark.e2e

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Fixed, so a run is repeatable: the same seed, the same examples per operation, a time bound.
SEED = 20261201
MAX_EXAMPLES = 8
MAX_TIME_SEC = 35


def test_schemathesis_finds_no_failure(
    takt_local: LocalTakt, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            str(CONFIG),
            "run",
            f"{takt_local.url}/v1/openapi.json",
            "--url",
            takt_local.url,
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            str(SEED),
            "--max-time",
            str(MAX_TIME_SEC),
            "--workers",
            "1",
            "--generation-database",
            "none",
            "--request-timeout",
            "10",
            "--no-color",
            "--report",
            "junit",
            "--report-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=MAX_TIME_SEC + 120,
        env={
            **os.environ,
            "SCHEMATHESIS_TELEMETRY": "false",
            "SCHEMATHESIS_HOOKS": "tests.e2e.schemathesis_hooks",
            "PYTHONPATH": checkout_pythonpath(ROOT),
        },
        check=False,
    )
    generated = re.search(r"(\d+) generated", run.stdout)
    record_property("schemathesis_cases", generated.group(1) if generated else "?")
    print(run.stdout[-3000:])
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-3000:]
    assert generated is not None and int(generated.group(1)) > 0
