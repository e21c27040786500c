"""One price table: every list price the tooling uses is written once, in
`takt_cli/capacity/prices.py`, and both the cost per million (`Prices`) and the idle cost of a
deployment (`takt_cli.capacity.idle`, checked in tests/infra/test_infra_cost.py) read it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

from takt_cli.capacity.prices import LIST_PRICES, US_EAST_1, Prices

ROOT = Path(__file__).resolve().parents[3]
PRICES_MODULE = ROOT / "cli" / "takt_cli" / "capacity" / "prices.py"
# Where a second copy of a price could be written: the tooling, the runtime, the CDK app, the
# Lambda handlers and the benchmarks.
SOURCES = ("cli", "layers", "infra", "functions", "bench")
# A price in fractions of a cent (0.625, 0.0000133334, 0.045) is no number code writes by chance;
# a round one (0.50, 3.00) is, so only the former are looked for outside the table.
DISTINCT = {price.listed for price in LIST_PRICES.values() if round(price.listed * 100, 9) % 1 != 0}


# A number as Python writes a float; only a module holding one that is a price is parsed.
NUMBER = re.compile(r"\d*\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+")


def _float_literals(path: Path) -> Iterator[tuple[int, float]]:
    text = path.read_text()
    if not any(float(number) in DISTINCT for number in NUMBER.findall(text)):
        return
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Constant) and type(node.value) is float:
            yield node.lineno, node.value


def second_copies(paths: list[Path]) -> list[str]:
    """`path:line value` for each literal in `paths` (the table excepted) that is one of the
    table's fractional-cent prices."""
    return [
        f"{path.name}:{line} {value}"
        for path in paths
        if path != PRICES_MODULE
        for line, value in _float_literals(path)
        if value in DISTINCT
    ]


def test_one_price_table_no_module_writes_a_list_price_twice() -> None:
    paths = sorted(path for root in SOURCES for path in (ROOT / root).rglob("*.py"))

    assert len(DISTINCT) >= 10, "one-price-table: the fractional-cent prices to look for"
    assert second_copies(paths) == [], (
        "one-price-table: a list price is written outside takt_cli/capacity/prices.py; "
        "read it from LIST_PRICES (or US_EAST_1) instead"
    )


def test_one_price_table_each_price_is_one_literal_in_the_table() -> None:
    literals = [value for _, value in _float_literals(PRICES_MODULE) if value in DISTINCT]

    assert sorted(literals) == sorted(
        price.listed for price in LIST_PRICES.values() if price.listed in DISTINCT
    ), "one-price-table: each price is written once in the table, nowhere else in its module"


def test_one_price_table_a_copied_price_is_found(tmp_path: Path) -> None:
    """The check finds a price written again, as infra/cost.py's own table had 13 of them."""
    copy = tmp_path / "cost.py"
    copy.write_text('PRICES = {"lambda_gb_s": 0.0000133334, "write_unit": 0.625, "x": 0.5}\n')

    assert second_copies([copy]) == ["cost.py:1 1.33334e-05", "cost.py:1 0.625"], (
        "one-price-table: a copied price is found"
    )


def test_one_price_table_the_cost_model_reads_the_table() -> None:
    assert [field.name for field in fields(Prices)] == list(LIST_PRICES), (
        "one-price-table: Prices has a field for each price of the table, in its order"
    )
    assert all(getattr(US_EAST_1, name) == price.listed for name, price in LIST_PRICES.items()), (
        "one-price-table: US_EAST_1 is the table's listed figures"
    )
