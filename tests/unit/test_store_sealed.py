"""The store is sealed (docs/ARCHITECTURE.md): DynamoDB's expressions, its typed attribute maps
and its condition failures appear in takt only under `takt/store/`, so every other part works on
typed records and the store's own errors."""

from __future__ import annotations

import re
from pathlib import Path

TAKT = Path(__file__).resolve().parents[2] / "layers" / "takt"

# What only the data-access layer writes: a request's expressions, an attribute map's typed
# values (`{"S": ...}`, `item["N"]`), the (de)serializers, and reading a ClientError's condition.
DYNAMODB = re.compile(
    r"(Condition|KeyCondition|Update|Projection|Filter)Expression|ExpressionAttribute"
    r"|\{\"(S|N|SS|NS|B|BOOL|M|L)\": |\[\"(S|N|SS|NS|B)\"\]|\.get\(\"(S|N|SS)\""
    r"|TypeSerializer|TypeDeserializer|is_condition_failure|condition_failure_item"
)


def leaks(root: Path) -> list[str]:
    """`path:line` of each DynamoDB detail in a module of `root` outside its `store/`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "store":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if DYNAMODB.search(line):
                found.append(f"{path.relative_to(root)}:{number}")
    return found


def test_no_dynamodb_detail_outside_the_store() -> None:
    assert leaks(TAKT) == []


def test_an_attribute_map_read_outside_the_store_is_found(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "jobs.py").write_text('key = {"S": "inside: allowed"}\n')
    (tmp_path / "watchdog.py").write_text('\n\ntenant = item["tenant_id"]["S"]\n')

    assert leaks(tmp_path) == ["watchdog.py:3"]
