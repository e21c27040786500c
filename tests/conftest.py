"""Shared fixtures: moto in server mode (one per test process), fresh tables and lanes per test,
and a manual clock. Server mode, not in-process mocking: its conditional writes hold under
concurrency, which the dispatch and lease tests rely on."""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.config import Settings
from takt.observability import logger, metrics
from takt.wiring import Services, build_services
from takt_cli.local import moto_speedups
from takt_cli.local.provision import provision
from takt_cli.local.runtime import FAKE_CREDENTIALS, free_port
from tests.support.distribution import distribute
from tests.support.env import TEST_EGRESS_ALLOW
from tests.support.logs import captured_log

os.environ.update(FAKE_CREDENTIALS)
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups and orders the tests for xdist's workers (tests.support.distribution)."""
    distribute(config, items)


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """Each test leaves the environment as it found it: an in-process `takt local` sets the
    TAKT_* variables its handlers read, which Settings would otherwise pick up in later tests."""
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


@pytest.fixture(autouse=True)
def _no_metrics_left_over() -> None:
    """Each test starts with no metric waiting to be flushed: Powertools keeps one metric set
    per process, and what a test added without flushing would land in the next test's EMF."""
    metrics.clear_metrics()


@pytest.fixture(autouse=True)
def _no_correlation_id_left_over() -> None:
    """Each test starts with no correlation id on takt's logger: the API handler sets one per
    request (`inject_lambda_context`), Powertools keeps it on the process's one logger, and
    every later line would carry it, as no other function's lines do in Lambda (the log-bytes
    tests of the worker failed when an API handler test had run before them in their process)."""
    logger.set_correlation_id(None)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer  # noqa: PLC0415 - moto's server loads only for the tests that start it

    moto_speedups.apply()
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def make_settings(endpoint: str, **overrides: object) -> Settings:
    """Settings naming a fresh set of tables and lanes on the moto server, created here."""
    uid = uuid.uuid4().hex[:8]
    base = Settings(
        jobs_table=f"jobs-{uid}",
        due_table=f"due-{uid}",
        executions_table=f"executions-{uid}",
        idempotency_table=f"idempotency-{uid}",
        tenants_table=f"tenants-{uid}",
        aws_endpoint_url=endpoint,
        due_shards=4,
        open_shards=2,
        **{"egress_allow": TEST_EGRESS_ALLOW, **overrides},
    )
    env = provision(build_services(base).clients, base, prefix=f"takt-{uid}")
    return base.model_copy(update={"lane_urls": json.loads(env["TAKT_LANE_URLS"])})


@pytest.fixture
def settings(moto_endpoint: str) -> Settings:
    return make_settings(moto_endpoint)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC))


@pytest.fixture
def svc(settings: Settings, clock: ManualClock) -> Services:
    return build_services(settings, clock)


@pytest.fixture
def log_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """takt's log lines of INFO and above as JSON, formatted as they are emitted (the keys of
    `log_keys` live in the emitting thread, so formatting later would lose them)."""
    with captured_log(logging.INFO) as stream:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
