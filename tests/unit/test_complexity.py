"""No runtime function is more complex than MAX_COMPLEXITY (radon's cyclomatic complexity).

The runtime is the library the Lambda layer ships (layers/takt) and the handlers (functions/);
the tooling in cli/takt_cli is left out. A function this branchy mixes decisions that want
names of their own, and its tests cannot reach every path. `make lint` runs this file too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from radon.visitors import Class, ComplexityVisitor, Function

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = (ROOT / "layers" / "takt", ROOT / "functions")
MAX_COMPLEXITY = 15


def functions_of(blocks: Iterable[Function | Class]) -> Iterator[Function]:
    """Every function of radon's blocks: methods of classes and functions nested in functions
    too (radon scores a closure apart from the function around it)."""
    for block in blocks:
        if isinstance(block, Class):
            yield from functions_of(block.methods)
            yield from functions_of(block.inner_classes)
        else:
            yield block
            yield from functions_of(block.closures)


def _top_level(source: str) -> list[Function | Class]:
    visitor = ComplexityVisitor.from_code(source)
    return [*visitor.functions, *visitor.classes]


def too_complex(source: str, limit: int = MAX_COMPLEXITY) -> list[str]:
    """`name (complexity)` of each function of `source` above `limit`."""
    return sorted(
        f"{f.fullname}:{f.lineno} ({f.complexity})"
        for f in functions_of(_top_level(source))
        if f.complexity > limit
    )


def test_no_runtime_function_is_above_the_limit() -> None:
    found = [
        f"{path.relative_to(ROOT)} {name}"
        for folder in RUNTIME
        for path in sorted(folder.rglob("*.py"))
        for name in too_complex(path.read_text())
    ]
    assert found == [], f"split these (radon cc above {MAX_COMPLEXITY}): {found}"


def test_the_check_finds_a_method_and_a_closure_above_the_limit() -> None:
    branches = "".join(f"        if x == {i}:\n            return {i}\n" for i in range(15))
    source = (
        "class Tall:\n    def method(self, x):\n" + branches + "        return -1\n"
        "def outer():\n    def inner(x):\n" + branches + "        return -1\n    return inner\n"
    )
    assert too_complex(source) == ["Tall.method:2 (16)", "inner:35 (16)"]
    assert too_complex(source, limit=16) == []
