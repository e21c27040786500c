"""An embedded `takt local` (the benchmarks run one in-process) leaves the process's environment
as it found it when stopped: the TAKT_* settings it sets for its handlers, such as the webhook
master secret, would otherwise sign the requests of every deployment built after it."""

from __future__ import annotations

import os

from takt.config import get_settings
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port


def test_a_stopped_runtime_leaves_no_takt_settings_behind() -> None:
    before = dict(os.environ)
    runtime = LocalRuntime(RuntimeOptions(port=free_port(), console_dir=None))
    runtime.start()
    try:
        during = get_settings().signing_secret
    finally:
        runtime.stop()

    assert during is not None
    assert "TAKT_SIGNING_SECRET" not in os.environ
    assert dict(os.environ) == before
    assert get_settings().signing_secret is None
