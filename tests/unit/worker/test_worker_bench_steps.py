"""bench/workers.py splits a worker's CPU by the frames py-spy reports ("Class.method"): a step
whose method was renamed or moved counts nothing and reads as free, so each must still exist."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench/workers.py"


def _steps() -> dict[str, str]:
    """bench/workers.py's STEPS, read without importing the bench (it starts nothing here)."""
    for node in ast.parse(BENCH.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "STEPS" for t in node.targets
        ):
            return dict(ast.literal_eval(node.value))
    raise AssertionError("bench/workers.py has no STEPS")


def _methods() -> set[str]:
    """Every "Class.method" defined in takt's runtime."""
    found: set[str] = set()
    for path in (ROOT / "layers/takt").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found.update(
                    f"{node.name}.{item.name}"
                    for item in node.body
                    if isinstance(item, ast.FunctionDef)
                )
    return found


def test_every_step_the_worker_bench_times_names_a_method_takt_still_has() -> None:
    methods = _methods()

    missing = {step: frame for step, frame in _steps().items() if frame.strip() not in methods}

    assert missing == {}, (
        "bench/workers.py: a step naming no method of takt's runtime is never sampled"
    )
