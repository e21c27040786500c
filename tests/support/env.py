"""Fresh tables and lanes per test on one set of clients per test process.

Creating boto3 clients costs a few hundred milliseconds (each new session parses the service
models again), which would dominate a suite of short tests; clients are endpoint-wide and
thread-safe, so one pair per process serves every test, and each test still gets its own tables
and queues, named uniquely.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from takt.aws import AwsClients
from takt.config import Settings
from takt.wiring import Services
from takt_cli.local.provision import provision

# The suite's HTTP targets are receivers on 127.0.0.1, which the default Settings refuse (as a
# deployed stack does): test settings allow loopback, and the egress tests set their own list.
TEST_EGRESS_ALLOW = ("127.0.0.0/8", "::1/128")

# The integration conftest's factory fixtures: settings or services with overrides.
SettingsFactory = Callable[..., Settings]
ServicesFactory = Callable[..., Services]


def fresh_settings(clients: AwsClients, endpoint: str, **overrides: Any) -> Settings:
    """Settings naming a new set of tables and lanes, created on the endpoint now."""
    uid = uuid.uuid4().hex[:8]
    values: dict[str, Any] = {
        "jobs_table": f"jobs-{uid}",
        "due_table": f"due-{uid}",
        "executions_table": f"executions-{uid}",
        "idempotency_table": f"idempotency-{uid}",
        "tenants_table": f"tenants-{uid}",
        "aws_endpoint_url": endpoint,
        "due_shards": 4,
        "open_shards": 2,
        "egress_allow": TEST_EGRESS_ALLOW,
    }
    values.update(overrides)
    base = Settings(**values)
    env = provision(clients, base, prefix=f"takt-{uid}")
    return base.model_copy(update={"lane_urls": json.loads(env["TAKT_LANE_URLS"])})


def checkout_pythonpath(root: Path) -> str:
    """The PYTHONPATH of a process a test starts from the checkout at `root`: its own `layers`
    and `cli` first, so that a copy of the code (`make mutants` runs the tests in one) is what
    the process imports, not the package the virtualenv installed."""
    return os.pathsep.join(str(root / part) for part in ("layers", "cli", "."))
