"""The import contracts in pyproject.toml (docs/ARCHITECTURE.md's layers, no cycle between takt's
parts, takt never importing takt_cli, the engines reaching the tables through the store ports,
the occurrence policy pure, the CDK app never importing the tooling or the wiring) hold, and
each one fails on the import it forbids.

The breaking cases run lint-imports on a copy of the packages with one import added, inside
a function: grimp counts those too, so a lazy import cannot hide a cycle or a layer crossed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(packages: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the repository's contracts, on the packages found in `packages`."""
    env = {**os.environ, "PYTHONPATH": str(packages)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", "--config", str(ROOT / "pyproject.toml")],
        cwd=packages,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def packages(tmp_path: Path) -> Path:
    """A copy of takt, takt_cli and the CDK app (infra) to break."""
    skip = shutil.ignore_patterns("__pycache__", "worker_image")
    shutil.copytree(ROOT / "layers" / "takt", tmp_path / "takt", ignore=skip)
    shutil.copytree(ROOT / "cli" / "takt_cli", tmp_path / "takt_cli", ignore=skip)
    shutil.copytree(ROOT / "infra", tmp_path / "infra", ignore=skip)
    return tmp_path


def add_lazy_import(module: Path, statement: str) -> None:
    with module.open("a") as out:
        out.write(f"\n\ndef _added_on_purpose() -> None:\n    {statement}\n")


def test_the_repository_keeps_every_import_contract() -> None:
    done = lint_imports(ROOT / "layers")

    # Every contract pyproject.toml declares is checked and kept (counted from the file, so a
    # new contract needs no edit here).
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(contracts['contracts'])} kept, 0 broken" in done.stdout


def test_the_domain_importing_the_api_breaks_the_layers_and_makes_a_cycle(packages: Path) -> None:
    add_lazy_import(packages / "takt" / "models" / "ids.py", "from takt.api import app")

    done = lint_imports(packages)

    assert done.returncode == 1
    assert "api and wiring BROKEN" in done.stdout  # the layers
    assert "in functions too) BROKEN" in done.stdout  # no cycle between takt's parts
    assert "takt.models.ids -> takt.api.app" in done.stdout


def test_an_engine_importing_an_adapter_breaks_the_layers(packages: Path) -> None:
    add_lazy_import(packages / "takt" / "worker" / "runner.py", "import takt.targets.router")

    done = lint_imports(packages)

    assert done.returncode == 1
    assert "takt.worker.runner -> takt.targets.router" in done.stdout


def test_the_runtime_importing_the_tooling_breaks_its_contract(packages: Path) -> None:
    add_lazy_import(packages / "takt" / "clock.py", "import takt_cli")

    done = lint_imports(packages)

    assert done.returncode == 1
    assert "never imports the tooling (takt_cli) BROKEN" in done.stdout


def test_an_engine_importing_a_concrete_store_breaks_the_store_ports_contract(
    packages: Path,
) -> None:
    add_lazy_import(packages / "takt" / "dispatch" / "claimer.py", "import takt.store.jobs")

    done = lint_imports(packages)

    assert done.returncode == 1, "an engine must reach the jobs table through takt.store.ports"
    assert "through takt.store.ports BROKEN" in done.stdout
    assert "takt.dispatch.claimer -> takt.store.jobs" in done.stdout


def test_the_occurrence_policy_reading_the_settings_breaks_its_purity(packages: Path) -> None:
    """takt.config sits on the domain's floor, so only the purity contract forbids it."""
    add_lazy_import(packages / "takt" / "occurrences.py", "import takt.config")

    done = lint_imports(packages)

    assert done.returncode == 1
    assert "is pure: models, schedules, clocks BROKEN" in done.stdout
    assert "api and wiring KEPT" in done.stdout  # the layers allow it: purity is its own rule


@pytest.mark.parametrize(
    ("module", "statement", "chain"),
    [
        ("stateless", "from takt_cli.capacity import prices", "takt_cli.capacity.prices"),
        ("functions", "from takt.wiring import Services", "takt.wiring"),
    ],
)
def test_the_cdk_app_importing_the_tooling_or_the_wiring_breaks_its_contract(
    packages: Path, module: str, statement: str, chain: str
) -> None:
    """The idle cost tool left the CDK app for the tooling; it may not come back in by an import."""
    add_lazy_import(packages / "infra" / f"{module}.py", statement)

    done = lint_imports(packages)

    assert done.returncode == 1, f"cdk-app-no-tooling: infra.{module} may not import {chain}"
    assert "nor takt.wiring BROKEN" in done.stdout
    assert f"infra.{module} -> {chain}" in done.stdout


def test_the_region_lease_policy_reaching_a_store_breaks_its_purity(packages: Path) -> None:
    """takt.regions.lease decides on what it is given; the fence does the reading and writing."""
    add_lazy_import(packages / "takt" / "regions" / "lease.py", "import takt.store.region_lease")

    done = lint_imports(packages)

    assert done.returncode == 1, "pure-region-lease: the lease policy may not import a store"
    assert "no settings, no clock BROKEN" in done.stdout
    assert "takt.regions.lease -> takt.store.region_lease" in done.stdout
