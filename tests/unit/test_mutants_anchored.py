"""Every named mutation still applies: its text occurs exactly once in its file, and the tests
named for it exist. A refactor that moved the text would otherwise make `make mutants` report a
mutation as run while it changed nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.mutants.mutations import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parents[2]
DESIGN_INVARIANTS = range(1, 11)


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_the_mutations_text_occurs_once_and_changes_it(mutation: Mutation) -> None:
    text = (ROOT / mutation.path).read_text()

    for old, new in mutation.edits:
        assert text.count(old) == 1, f"mutation anchor must occur once: {old!r}"
        assert new != old, f"mutation must change its anchor: {old!r}"


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_the_tests_named_for_a_mutation_exist(mutation: Mutation) -> None:
    assert mutation.tests
    for test in mutation.tests:
        path, _, node = test.partition("::")
        source = (ROOT / path).read_text()
        function = node.partition("[")[0]
        assert not function or re.search(rf"^def {re.escape(function)}\(", source, re.M), test


def test_every_design_invariant_has_a_mutation() -> None:
    # "N. ..." names a DESIGN invariant; a rule of one part only names its part ("retry plan: ").
    broken = {int(m.breaks.split(".", 1)[0]) for m in MUTATIONS if m.breaks[0].isdigit()}

    assert broken >= set(DESIGN_INVARIANTS)


# The parts whose every rule issue 28 asks a mutation for, and how a mutation of each is known:
# by the file it changes, or (the policies, which share a module) by the rule it names.
PARTS: dict[str, Callable[[Mutation], bool]] = {
    "the lifecycle": lambda m: m.path.startswith("layers/takt/executions/"),
    "the claimer": lambda m: m.path == "layers/takt/dispatch/claimer.py",
    "the watchdog": lambda m: m.path == "layers/takt/watchdog/sweeper.py",
    "the worker": lambda m: m.path.startswith("layers/takt/worker/"),
    "the retry plan": lambda m: m.breaks.startswith("retry plan:"),
    "the overlap policies": lambda m: "overlap" in m.breaks,
    "the catch-up policies": lambda m: "catch-up" in m.breaks or "catchup" in m.breaks,
    "the imports": lambda m: m.path.startswith("cli/takt_cli/migrate/"),
}


@pytest.mark.parametrize("part", PARTS)
def test_every_part_issue_28_names_has_mutations(part: str) -> None:
    found = [m.name for m in MUTATIONS if PARTS[part](m)]

    assert len(found) >= 2, f"every rule of {part} has a mutation in make mutants (issue 28)"


def test_mutation_names_are_unique() -> None:
    names = [m.name for m in MUTATIONS]

    assert len(names) == len(set(names))


def _reliability_rows() -> list[list[str]]:
    """docs/RELIABILITY.md's mutation table: each row's cells."""
    lines = (ROOT / "docs" / "RELIABILITY.md").read_text().splitlines()
    start = lines.index("| mutation | breaks | caught by | its failure | s |") + 2
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("| `"))
    rows = lines[start:end]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def test_the_reliability_table_lists_each_mutation_once_as_caught_by_one_of_its_tests() -> None:
    """The table in docs/RELIABILITY.md is `make mutants`' output: one row a mutation, each with
    the rule it breaks and the test that caught it. A mutation added, renamed or dropped without
    a run leaves it stale."""
    table = _reliability_rows()
    rows = {row[0].strip("`"): row for row in table}
    names = [m.name for m in MUTATIONS]
    assert len(table) == len(rows) == len(names), "one row per mutation, no row twice"
    assert sorted(rows) == sorted(names), "the table names exactly the catalog's mutations"
    for mutation in MUTATIONS:
        _, breaks, caught_by, *_ = rows[mutation.name]
        assert breaks == mutation.breaks, f"{mutation.name}: its rule as the catalog states it"
        test = caught_by.strip("`")
        # A listed test, one case of a listed parametrized test, or a test of a listed file.
        named = (test, test.partition("[")[0], test.partition("::")[0])
        assert any(listed in named for listed in mutation.tests), (
            f"{mutation.name}: caught by {caught_by}, not one of its tests"
        )
