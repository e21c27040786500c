"""Fixtures for the integration tests: shared clients, fresh tables per test, a loopback
receiver and the history checker.

moto's server (one per test process) and the manual clock come from the root conftest; `settings`
and `svc` are overridden here to reuse one pair of boto3 clients per process (see
`tests.support.env`), which keeps the suite fast without sharing any table between tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from takt.aws import AwsClients, make_clients
from takt.clock import ManualClock
from takt.config import Settings
from takt.wiring import Services
from tests.support.env import ServicesFactory, SettingsFactory, fresh_settings
from tests.support.history import HistoryChecker
from tests.support.receiver import Receiver


@pytest.fixture(scope="session")
def clients(moto_endpoint: str) -> AwsClients:
    return make_clients(Settings(aws_endpoint_url=moto_endpoint))


@pytest.fixture
def make_test_settings(moto_endpoint: str, clients: AwsClients) -> SettingsFactory:
    """Settings with overrides (lease_sec, heartbeat_sec, ...) on their own fresh tables."""

    def make(**overrides: Any) -> Settings:
        return fresh_settings(clients, moto_endpoint, **overrides)

    return make


@pytest.fixture
def settings(make_test_settings: SettingsFactory) -> Settings:
    return make_test_settings()


@pytest.fixture
def svc(settings: Settings, clock: ManualClock, clients: AwsClients) -> Services:
    return Services(settings=settings, clients=clients, clock=clock)


@pytest.fixture
def make_svc(
    make_test_settings: SettingsFactory, clock: ManualClock, clients: AwsClients
) -> ServicesFactory:
    """Services on fresh tables with custom settings, sharing the process's clients."""

    def make(**overrides: Any) -> Services:
        return Services(settings=make_test_settings(**overrides), clients=clients, clock=clock)

    return make


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.fixture
def checker(svc: Services) -> HistoryChecker:
    return HistoryChecker(svc)
