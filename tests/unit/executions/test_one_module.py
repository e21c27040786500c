"""One module holds every execution transition and the `check_at` rule (docs/ARCHITECTURE.md,
"The execution lifecycle"): these read the runtime's source and fail when another module builds
a `Transition` or reads the resend wait itself."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[3] / "layers" / "takt"
LIFECYCLE = {"executions/lifecycle.py"}


def _modules_where(found: type[ast.AST], name: str) -> set[str]:
    """The runtime's modules holding a call of `name` (for ast.Call) or a read of the attribute
    `name` (for ast.Attribute), relative to the package."""
    where = set()
    for path in RUNTIME.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if found is ast.Call and isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if called == name:
                    where.add(path.relative_to(RUNTIME).as_posix())
            elif found is ast.Attribute and isinstance(node, ast.Attribute) and node.attr == name:
                where.add(path.relative_to(RUNTIME).as_posix())
    return where


def test_every_execution_transition_is_built_in_the_lifecycle() -> None:
    assert _modules_where(ast.Call, "Transition") == LIFECYCLE


def test_only_the_lifecycle_reads_the_resend_wait_that_sets_check_at() -> None:
    assert _modules_where(ast.Attribute, "pending_resend_after_sec") == LIFECYCLE


def test_only_the_lifecycle_builds_the_run_and_backfill_engines() -> None:
    assert _modules_where(ast.Call, "RunEngine") == LIFECYCLE
    assert _modules_where(ast.Call, "Backfiller") == LIFECYCLE
