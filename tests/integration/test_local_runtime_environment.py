"""An embedded `takt local` (the benchmarks run one in-process) runs with fair claims, and leaves
the process's environment as it found it when stopped: the TAKT_* settings it sets for its
handlers, such as the webhook master secret, would otherwise sign the requests of every
deployment built after it; and its loggers' levels, which would hide every later warning.

It runs in a process of its own: moto's state is one per process, and the runtime's tables have
fixed names that another in-process runtime of this test process may already have made."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, logging, os
from takt.config import get_settings
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port

def loggers():
    named = [logging.getLogger(n) for n in ("takt", "botocore")]
    return [[logger.level, logger.propagate] for logger in named]

before = dict(os.environ)
loggers_before = loggers()
runtime = LocalRuntime(RuntimeOptions(port=free_port(), console_dir=None, log_level="ERROR"))
runtime.start()
try:
    during = get_settings().signing_secret
    fair = [get_settings().claim_max_items, get_settings().fair_queue_sec]
    loggers_during = loggers()
finally:
    runtime.stop()
print(json.dumps({
    "loggers": [loggers_before, loggers_during, loggers()],
    "during": during,
    "fair": fair,
    "left": sorted(set(os.environ) - set(before)),
    "same": dict(os.environ) == before,
    "after": get_settings().signing_secret,
}))
"""


def test_a_stopped_runtime_leaves_no_takt_settings_behind() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAKT_")}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    seen = json.loads(run.stdout.splitlines()[-1])

    assert seen["during"] is not None
    # Fair by default in `takt local` too: bounded claims, sized by the lanes' drain
    # (docs/FAIRNESS.md); null in either would be fairness off.
    assert seen["fair"] == [2, 0.5]
    assert seen["left"] == []
    assert seen["same"] is True
    assert seen["after"] is None
    # Nor its loggers' levels: a bench's runtime at ERROR hid later tests' warnings (takt's
    # logger, WARNING before, is ERROR and kept to itself while the runtime runs).
    before, during, after = seen["loggers"]
    assert during == [[logging.ERROR, False], [logging.ERROR, True]]
    assert after == before, "a stopped runtime sets its loggers back"
