"""How `pytest -n` shares the suite between its workers (`--dist loadgroup`, pyproject.toml).

xdist's default (`load`) hands each worker a consecutive quarter of its share up front, in the
order of the collection: on two workers of the 4,050 tests the first was handed tests 1-506 at
once (the API tests, the bench smokes, the browser tests, every fault scenario of tests/chaos and
the first e2e modules), most of the suite's waiting on processes and real time, and the other
could only take the short tests left after it. Under `loadgroup` a worker is given one unit at a
time, in the order of the collection, and a unit is a group or a single test.

Two rules choose the units and their order:

- Tests that share an expensive fixture form one group, so it is built once in the run instead
  of once per worker: the CDK app synthesized in process (`stacks`, `fargate_stacks`), the
  assemblies synthesized as the CLI does (`cli_assemblies`), and a module's own module-scoped
  fixtures (a `takt local` per e2e module, for one), which a worker would otherwise set up again
  for every run of that module's tests it is handed.
- The long units go first: the two CDK groups, then the directories whose tests start processes
  and wait on real time (fault scenarios, benches, e2e, browser, packaging), then the rest in
  their usual order. Short tests then fill both workers to the end, and no worker is left
  running a long test alone while the other has nothing to do.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId

# The fixtures each of which synthesizes a CDK app (seconds of CPU) once per test process.
CDK_GROUPS = {
    "cli_assemblies": "cdk-cli",
    "stacks": "cdk-app",
    "fargate_stacks": "cdk-app",
}
# Scopes wider than a test but narrower than the run: set up once per worker per module.
MODULE_SCOPES = {"module", "class", "package"}
# Directories whose tests start processes and wait on real time: scheduled before the rest.
SLOW_DIRECTORIES = (
    "tests/chaos/",
    "tests/bench/",
    "tests/e2e/",
    "tests/browser/",
    "tests/packaging/",
)


def group_of(item: pytest.Item) -> str | None:
    """The xdist group `item` runs in, or None where it may run on any worker on its own."""
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    if fixtureinfo is None:
        return None
    # Every fixture the test uses, directly or through another fixture.
    for name in fixtureinfo.names_closure:
        if name in CDK_GROUPS:
            return CDK_GROUPS[name]
    definitions = fixtureinfo.name2fixturedefs
    if any(defs and defs[-1].scope in MODULE_SCOPES for defs in definitions.values()):
        return item.path.stem
    return None


def rank(item: pytest.Item, group: str | None) -> int:
    """0 for the CDK groups, 1 for the tests that wait on processes, 2 for the rest."""
    if group in CDK_GROUPS.values():
        return 0
    return 1 if item.nodeid.startswith(SLOW_DIRECTORIES) else 2


def distribute(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Name each item after its group and order the items by rank (stable: the usual order
    within a rank), in an xdist worker of a `loadgroup` run only: every worker computes the same
    order, as xdist requires, and a run without workers keeps pytest's order and ids."""
    # xdist runs its workers with `dist` "no" and tells them of `loadgroup` by this option.
    if not hasattr(config, "workerinput") or not getattr(config.option, "loadgroup", False):
        return
    ranked = []
    for item in items:
        group = group_of(item)
        ranked.append((rank(item, group), item))
        if group is not None:
            name_after_group(item, group)
    items[:] = [item for _, item in sorted(ranked, key=lambda pair: pair[0])]


def name_after_group(item: pytest.Item, group: str) -> None:
    """Name `item` `<its id>@<group>`, which is how xdist's scheduler reads a test's group.

    xdist 3.8 does this itself for an `xdist_group` mark by setting `_nodeid`, which pytest 9
    no longer reads (pytest-dev/pytest-xdist#1386): its `loadgroup` then groups nothing and
    says nothing. Until a release of xdist fixes it, the id pytest 9 reads is set here.
    """
    item._id = NodeId.parse(f"{item.nodeid}@{group}")
