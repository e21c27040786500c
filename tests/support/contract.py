"""The job fields of the API's contract as the committed OpenAPI document states them, walked
independently of the CLI's and the console's own readers, for the tests that hold them to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
SCHEMAS: dict[str, Any] = json.loads(DOCUMENT.read_text(encoding="utf-8"))["components"]["schemas"]


def _followed(schema: dict[str, Any]) -> dict[str, Any]:
    """A property's schema with its `$ref` followed and its null option left out."""
    options = [o for o in schema.get("anyOf", []) if o != {"type": "null"}]
    schema = options[0] if options else schema
    ref = schema.get("$ref")
    return SCHEMAS[ref.rsplit("/", 1)[1]] if isinstance(ref, str) else schema


def job_fields(model: str) -> list[tuple[str, list[Any]]]:
    """(field, its enum values) for every field of `model` and of each object it nests
    (`retry.backoff`), as the API names them in its errors."""
    found: list[tuple[str, list[Any]]] = []
    for name, raw in SCHEMAS[model]["properties"].items():
        schema = _followed(raw)
        if schema.get("type") == "object" and "properties" in schema:
            for inner, raw_inner in schema["properties"].items():
                sub = _followed(raw_inner)
                found.append((f"{name}.{inner}", _followed(sub.get("items", sub)).get("enum", [])))
        else:
            found.append((name, _followed(schema.get("items", schema)).get("enum", [])))
    return found
