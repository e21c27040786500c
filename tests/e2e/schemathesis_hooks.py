"""Values of takt's own string formats for schemathesis (loaded with SCHEMATHESIS_HOOKS).

The OpenAPI document names a format where JSON Schema cannot state a grammar (docs/API.md): a
cron expression, a duration, a target. Schemathesis generates any string for a format it does
not know, which the API refuses, so a create would almost never succeed and the stateful phase
would reach no job. These draw from values of each grammar instead; what the grammars refuse is
tested beside the parsers (tests/unit/schedule, tests/api/test_api_bad_request_table.py).
"""

from __future__ import annotations

import schemathesis
from hypothesis import strategies as st

schemathesis.openapi.format(
    "takt-cron",
    st.sampled_from(
        [
            "*/5 * * * *",
            "0 6 * * mon-fri",
            "@hourly",
            "30 2 1 * *",
            "0 0 * * sun-sun",
            "* * * * * */10",
        ]
    ),
)
schemathesis.openapi.format(
    "takt-duration", st.sampled_from(["1s", "90s", "5m", "1h", "PT2H", "1d"])
)
# Targets the local runtime accepts and nothing answers: a handler no worker registered, and a
# loopback port nothing listens on (local mode allows loopback egress).
schemathesis.openapi.format(
    "takt-target", st.sampled_from(["handler:send_report", "http://127.0.0.1:9/hook"])
)
