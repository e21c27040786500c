"""Fixtures for the fault scenarios: the short or full form, clients for the faulty functions
apart from the checker's, fresh tables, and where each scenario's report goes.

`make test` runs each scenario's short form; `make chaos` (`--chaos-full`, or `TAKT_CHAOS=full`)
runs the full one: more jobs, more iterations, longer outages.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from takt.aws import AwsClients, make_clients
from takt.clock import ManualClock
from takt.config import Settings
from takt.wiring import Services
from tests.chaos.oracle import WireTap
from tests.chaos.sim import Sim
from tests.support.env import fresh_settings
from tests.support.history import ChaosReport, HistoryChecker

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "chaos"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--chaos-full",
        action="store_true",
        default=False,
        help="run the fault scenarios in full (more jobs, iterations, longer outages)",
    )


@dataclass(frozen=True)
class Form:
    """How big a scenario runs: `pick(short, full)` chooses a figure by form."""

    full: bool

    @property
    def name(self) -> str:
        return "full" if self.full else "short"

    def pick(self, short: int, full: int) -> int:
        return full if self.full else short


@pytest.fixture(scope="session")
def form(request: pytest.FixtureRequest) -> Form:
    full = bool(request.config.getoption("--chaos-full")) or os.environ.get("TAKT_CHAOS") == "full"
    return Form(full)


@pytest.fixture(scope="session")
def clients(moto_endpoint: str) -> AwsClients:
    """The checker's clients: never faulted."""
    return make_clients(Settings(aws_endpoint_url=moto_endpoint))


@pytest.fixture(scope="session")
def fault_clients(moto_endpoint: str) -> AwsClients:
    """The functions' clients, which scenarios hook faults into (and always unhook)."""
    return make_clients(Settings(aws_endpoint_url=moto_endpoint))


@pytest.fixture
def record_at_lease() -> bool:
    """Whether the claim leaves an `allow` occurrence's record to its lease
    (`Settings.record_at_lease`): the scenarios of the dispatch path, the workers and the
    leases run both ways (their modules override this with both values)."""
    return False


@pytest.fixture
def due_cursor() -> bool:
    """Whether claims pass the due items they finished with the partition's cursor
    (`Settings.due_cursor`) rather than deleting each: the dispatch scenarios run both ways."""
    return False


# The claim cursor's settings in the scenarios: a late margin of 6 s (burst claims off, so a
# claim reaches 1 s ahead), inside the jobs' 5-15 s periods: most next items are written
# ahead, where the cursor passes them, and some late.
CURSOR = {"due_cursor": True, "due_late_margin_sec": 6.0, "burst_ahead_sec": 0.0}


@pytest.fixture
def settings(
    moto_endpoint: str, clients: AwsClients, record_at_lease: bool, due_cursor: bool
) -> Settings:
    return fresh_settings(
        clients,
        moto_endpoint,
        due_shards=1,
        open_shards=1,
        lease_sec=10.0,
        heartbeat_sec=60.0,
        pending_resend_after_sec=15.0,
        due_grace_sec=5.0,
        record_at_lease=record_at_lease,
        **(CURSOR if due_cursor else {}),
    )


@pytest.fixture
def svc(settings: Settings, clock: ManualClock, clients: AwsClients) -> Services:
    return Services(settings=settings, clients=clients, clock=clock)


@pytest.fixture
def checker(svc: Services) -> HistoryChecker:
    return HistoryChecker(svc)


@pytest.fixture
def tap(moto_endpoint: str, settings: Settings, clock: ManualClock) -> Iterator[WireTap]:
    """A recording proxy in front of moto for this scenario's executions table: what the
    functions wrote and what DynamoDB answered, seen on the wire (tests.chaos.oracle)."""
    wire = WireTap(moto_endpoint, clock, settings.executions_table)
    yield wire
    wire.close()


@pytest.fixture
def make_sim(
    settings: Settings, fault_clients: AwsClients, clock: ManualClock, tmp_path: Path
) -> Any:
    """`make(tap=None, **options)`: a simulation on the fault clients, or, given a wire tap,
    on clients of its own that reach moto through the tap."""

    def make(tap: WireTap | None = None, **options: Any) -> Sim:
        clients = fault_clients
        if tap is not None:
            clients = make_clients(Settings(aws_endpoint_url=tap.endpoint("functions")))
        return Sim.create(settings, clients, clock, tmp_path, **options)

    return make


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """A seed per scenario, fixed unless TAKT_CHAOS_SEED says otherwise (printed on failure)."""
    base = int(os.environ.get("TAKT_CHAOS_SEED", "20261130"))
    value = base + sum(map(ord, request.node.name))
    print(f"chaos seed: {value}")
    return value


@pytest.fixture
def report_for(form: Form, seed: int) -> Any:
    def make(scenario: str) -> ChaosReport:
        return ChaosReport(scenario=scenario, seed=seed, form=form.name)

    return make


def publish(report: ChaosReport) -> Path:
    """Write the report where `make chaos` collects it, and print it."""
    path = report.write(ARTIFACTS)
    print(path.read_text())
    return path
