"""How `pytest -n` shares the suite between its workers (tests.support.distribution), on items
made here: the groups that keep an expensive fixture to one worker, and the long tests first."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from _pytest.nodeid import NodeId

from tests.support.distribution import distribute


@dataclass
class Definition:
    scope: str


@dataclass
class Item:
    """What the distribution reads of a pytest item: its id, path and fixtures with scopes."""

    _id: NodeId
    fixtures: dict[str, str] = field(default_factory=dict)

    @property
    def nodeid(self) -> str:
        return str(self._id)

    @property
    def path(self) -> Path:
        return Path(self._id.path)

    @property
    def _fixtureinfo(self) -> Any:
        defs = {name: [Definition(scope)] for name, scope in self.fixtures.items()}
        return SimpleNamespace(names_closure=list(self.fixtures), name2fixturedefs=defs)


def item(nodeid: str, **fixtures: str) -> Item:
    return Item(NodeId.parse(nodeid), fixtures)


def worker(*, loadgroup: bool = True) -> pytest.Config:
    """A worker's config as xdist sets it up: `workerinput`, and `loadgroup` among the options."""
    return cast(
        pytest.Config, SimpleNamespace(workerinput={}, option=SimpleNamespace(loadgroup=loadgroup))
    )


def ids(config: pytest.Config, items: list[Item]) -> list[str]:
    distribute(config, cast(list[pytest.Item], items))
    return [i.nodeid for i in items]


def test_tests_of_one_synthesized_cdk_app_share_a_group_so_one_worker_synthesizes_it_once() -> None:
    items = [
        item("tests/infra/test_a.py::test_one", stateless_template="session", stacks="session"),
        item("tests/infra/test_b.py::test_two", fargate_stacks="session"),
        item("tests/infra/test_c.py::test_three", cli_assemblies="session"),
    ]

    assert ids(worker(), items) == [
        "tests/infra/test_a.py::test_one@cdk-app",
        "tests/infra/test_b.py::test_two@cdk-app",
        "tests/infra/test_c.py::test_three@cdk-cli",
    ], "the tests of one synthesized app are named after one group, which xdist keeps together"


def test_a_modules_tests_share_a_group_when_they_use_a_module_scoped_fixture() -> None:
    items = [
        item("tests/api/test_a.py::test_one", takt_local="module"),
        item("tests/api/test_a.py::test_two", receiver="class"),
        item("tests/api/test_b.py::test_three", settings="function", moto_endpoint="session"),
    ]

    assert ids(worker(), items) == [
        "tests/api/test_a.py::test_one@test_a",
        "tests/api/test_a.py::test_two@test_a",
        "tests/api/test_b.py::test_three",
    ], "a module-scoped fixture is set up by one worker; a test of function fixtures runs alone"


def test_the_cdk_groups_then_the_tests_that_wait_on_processes_go_before_the_rest() -> None:
    items = [
        item("tests/unit/test_a.py::test_fast"),
        item("tests/chaos/test_b.py::test_scenario"),
        item("tests/api/test_c.py::test_request"),
        item("tests/e2e/test_d.py::test_flow"),
        item("tests/infra/test_e.py::test_template", stacks="session"),
    ]

    assert ids(worker(), items) == [
        "tests/infra/test_e.py::test_template@cdk-app",
        "tests/chaos/test_b.py::test_scenario",
        "tests/e2e/test_d.py::test_flow",
        "tests/unit/test_a.py::test_fast",
        "tests/api/test_c.py::test_request",
    ], "the long units are handed out first, each rank in the usual order"


@pytest.mark.parametrize(
    "config",
    [
        worker(loadgroup=False),
        cast(pytest.Config, SimpleNamespace(option=SimpleNamespace(loadgroup=True))),
    ],
    ids=["another-dist", "no-worker"],
)
def test_a_run_without_loadgroup_workers_keeps_pytests_order_and_ids(config: pytest.Config) -> None:
    items = [
        item("tests/unit/test_a.py::test_fast"),
        item("tests/infra/test_e.py::test_template", stacks="session"),
    ]

    assert ids(config, items) == [
        "tests/unit/test_a.py::test_fast",
        "tests/infra/test_e.py::test_template",
    ], "only a loadgroup worker names and orders the tests: -n 0 and --dist load keep pytest's"
