"""The one path every request takes before a route runs: who calls, then its headers, then its
body, parsed within bounds, then the route's body model, strictly.

Powertools parses and validates a body before any middleware runs, so a check placed in a
middleware comes too late: a body nested a thousand deep failed inside its parser (500) before
the access check could answer a caller without identity (401). `admit` runs first instead, on
the raw event, and answers every refusal with a problem+json 4xx naming the field:

1. the access check (401, 403): nothing about the request is read before the caller is known;
2. the headers takt reads, bounded (`Idempotency-Key`, `If-Match`);
3. the body: UTF-8 text, JSON only (415), at most `MAX_BODY_BYTES` (413), parsed as strict
   JSON (no `NaN`, `Infinity` or numbers too large or too small for a double, no lone surrogates,
   no key twice in one object: parsers disagree on which of the two counts) within `MAX_DEPTH`
   levels and `MAX_NUMBER_CHARS` per number, every string outside a payload free of control,
   line-separator, bidi and non-characters;
4. the route's body model: null refused for the fields its `NOT_NULL` names, then validated in
   pydantic's strict JSON mode: a type is never coerced (`"timeout_sec": true` or `"5"` is
   refused, not stored as 1 or 5). A number is a number, as JSON Schema counts it: `2.0` is the
   integer 2 (the OpenAPI document's `integer` allows it, so the API does too). A route whose
   body is optional takes `null` as no body, as its schema says.

Powertools validates the body again afterwards, which then always passes.
"""

from __future__ import annotations

import base64
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from takt.api.errors import InvalidRequestError, PayloadTooLargeError, UnsupportedMediaTypeError

# Slightly above the payload limit: the envelope (target, schedule, ...) comes on top.
MAX_BODY_BYTES = 300 * 1024
# Deeper than any job body needs (a payload is the caller's, but 32 levels is plenty for JSON
# meant for a webhook); far below the recursion limit of every parser on the way.
MAX_DEPTH = 32
# A double has at most 17 significant digits; 40 characters allow any of its written forms.
MAX_NUMBER_CHARS = 40
# DynamoDB allows 2,048 bytes in a partition key; the idempotency key is part of one.
MAX_IDEMPOTENCY_KEY = 256
# A job's version is a counter; 18 digits stay below 2**63.
MAX_ETAG_DIGITS = 18
# Characters that change how text displays or ends a line, refused in every string but payloads.
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# Line and paragraph separators end a line like CR/LF in a log or a terminal; the Basic
# Multilingual Plane's non-characters (U+FDD0-U+FDEF, U+FFFE, U+FFFF) are not text to
# interchange. (The OpenAPI document's text pattern states the same set, `TEXT_PATTERN`.)
LINE_SEPARATORS = frozenset("\u2028\u2029")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
# The header patterns, as the OpenAPI document states them (`takt.api.app.openapi_json`).
IF_MATCH_PATTERN = rf'^(\*|(W/)?"[0-9]{{1,{MAX_ETAG_DIGITS}}}")$'
IDEMPOTENCY_KEY_PATTERN = rf"^[!-~]{{1,{MAX_IDEMPOTENCY_KEY}}}$"
_ETAG = re.compile(rf'^(?:W/)?"([0-9]{{1,{MAX_ETAG_DIGITS}}})"$')
_IF_MATCH = re.compile(IF_MATCH_PATTERN)
_IDEMPOTENCY_KEY = re.compile(IDEMPOTENCY_KEY_PATTERN)


class _DuplicateKeyError(ValueError):
    """A key written twice in one JSON object (the parser stops at it)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKeyError(key)
        found[key] = value
    return found


class _Refused:
    """A number the parser met and refused; the walk after parsing names its field."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _refuse_constant(name: str) -> _Refused:
    return _Refused(f"{name} is not JSON")


def _bounded_int(text: str) -> int | _Refused:
    if len(text) > MAX_NUMBER_CHARS:
        return _Refused(f"a number of more than {MAX_NUMBER_CHARS} characters")
    return int(text)


def _bounded_float(text: str) -> float | _Refused:
    if len(text) > MAX_NUMBER_CHARS:
        return _Refused(f"a number of more than {MAX_NUMBER_CHARS} characters")
    value = float(text)
    if not math.isfinite(value):
        return _Refused(f"{text} is beyond a double's range")
    if value == 0.0 and any(digit in "123456789" for digit in text.lower().partition("e")[0]):
        # Too small for a double, as 1e400 is too large: stored, it would read back as 0.
        return _Refused(f"{text} is beyond a double's range (it would be 0)")
    return value


def _bad(field: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{field}: {message}", [{"field": field, "message": message}])


def depth_of(text: str) -> int:
    """How deep arrays and objects nest in JSON `text`, brackets inside strings not counted."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_json(text: str, *, field: str = "body") -> Any:
    """`text` as strict JSON within the bounds above; InvalidRequestError naming the field."""
    if depth_of(text) > MAX_DEPTH:
        raise _bad(field, f"nested more than {MAX_DEPTH} levels deep")
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_refuse_constant,
            parse_int=_bounded_int,
            parse_float=_bounded_float,
        )
    except _DuplicateKeyError as twice:
        # The key names the field when it is printable text; otherwise the body is blamed.
        key = twice.key
        named = key if key.isprintable() and _encodable(key) and len(key) <= 200 else field
        raise _bad(named, f"the key {key!r} is given twice in one object") from None
    except ValueError:
        raise _bad(field, "malformed JSON") from None
    _walk(value, field if field != "body" else "", in_payload=False)
    return value


def _walk(value: Any, path: str, *, in_payload: bool) -> None:
    """Refuse what the parser let through: refused numbers, lone surrogates, and (outside
    payloads, which are the caller's data) control and bidi characters."""
    if isinstance(value, _Refused):
        raise _bad(path or "body", value.reason)
    if isinstance(value, str):
        check_text(value, path or "body", controls=not in_payload)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", in_payload=in_payload)
    elif isinstance(value, dict):
        for key, item in value.items():
            # A bad key is blamed on the object that holds it: the key itself cannot be written
            # into the answer (a lone surrogate is not encodable, a control character garbles).
            check_text(key, path or "body", controls=not in_payload)
            where = f"{path}.{key}" if path else key
            _walk(item, where, in_payload=in_payload or key == "payload")


def check_text(value: str, field: str, *, controls: bool = True) -> None:
    """Refuse a lone surrogate anywhere, and control or bidi characters when `controls`."""
    if not _encodable(value):
        raise _bad(field, "holds a lone surrogate, which is not Unicode text")
    if controls:
        for char in value:
            if char in BIDI_CONTROLS or unicodedata.category(char) == "Cc":
                raise _bad(field, f"holds the control character U+{ord(char):04X}")
            if char in LINE_SEPARATORS:
                raise _bad(field, f"holds the line separator U+{ord(char):04X}")
            if _noncharacter(char):
                raise _bad(field, f"holds the non-character U+{ord(char):04X}")


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _noncharacter(char: str) -> bool:
    code = ord(char)
    return 0xFDD0 <= code <= 0xFDEF or code in (0xFFFE, 0xFFFF)


def check_headers(headers: Mapping[str, str]) -> None:
    """Bound the headers takt reads (HTTP API lower-cases their names)."""
    key = headers.get("idempotency-key")
    if key is not None and not _IDEMPOTENCY_KEY.fullmatch(key):
        raise _bad(
            "Idempotency-Key",
            f"1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters without spaces",
        )
    if_match = headers.get("if-match")
    if if_match is not None and not _IF_MATCH.fullmatch(if_match.strip()):
        raise _bad("If-Match", 'not "*" nor an ETag returned by this API')


def if_match_version(headers: Mapping[str, str]) -> int | None:
    """The version `If-Match` names; None when absent or `*` (RFC 9110: any current version)."""
    value = headers.get("if-match")
    if value is None or value.strip() == "*":
        return None
    match = _ETAG.fullmatch(value.strip())
    if match is None:
        raise _bad("If-Match", "not an ETag returned by this API")
    return int(match.group(1))


def check_body(
    headers: Mapping[str, str],
    body: str,
    model: type[BaseModel] | None,
    *,
    optional: bool = False,
) -> None:
    """Refuse a body that is too large, not JSON, malformed, or not `model` (when the route
    takes one; `null` stands for no body where the body is `optional`)."""
    if len(body.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES:
        raise PayloadTooLargeError(
            f"request body over {MAX_BODY_BYTES} bytes",
            [{"field": "body", "message": f"over {MAX_BODY_BYTES} bytes"}],
        )
    if model is None:
        return
    content_type = headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise UnsupportedMediaTypeError(
            f"send the body as application/json, not {content_type or 'no content type'}",
            [{"field": "Content-Type", "message": "must be application/json"}],
        )
    if not body.strip():
        raise _bad("body", "a JSON object is required")
    data = parse_json(body)
    if data is None and optional:
        return
    not_null: frozenset[str] = getattr(model, "NOT_NULL", frozenset())
    if isinstance(data, dict):
        for name in sorted(not_null):
            if name in data and data[name] is None:
                raise _bad(name, f"{name} may not be null")
    try:
        model.model_validate_json(_integral(data), strict=True)
    except ValidationError as exc:
        errors = model_errors(exc.errors())
        raise InvalidRequestError(
            "; ".join(f"{e['field']}: {e['message']}" for e in errors), errors
        ) from None


def _integral(data: Any) -> str:
    """`data` (parsed and checked) as the JSON text the model validates: a number with an
    integral value written as an integer, so `2.0` meets an `integer` field as JSON Schema says
    it does, while strict mode still refuses `true` and `"2"` there (a `number` field takes an
    integer as it is)."""

    def whole(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, list):
            return [whole(item) for item in value]
        if isinstance(value, dict):
            return {key: whole(item) for key, item in value.items()}
        return value

    return json.dumps(whole(data), ensure_ascii=False, separators=(",", ":"))


def body_text(body: str | None, base64_encoded: bool) -> str:
    """The request body as text: API Gateway base64-encodes a body that is not UTF-8 text, and
    takt reads only UTF-8 text (RFC 8259), so such a body is refused rather than decoded."""
    if not body:
        return ""
    if not base64_encoded:
        return body
    try:
        return base64.b64decode(body, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise _bad("body", "not UTF-8 text") from None


def model_errors(errors: Any) -> list[dict[str, Any]]:
    """pydantic's errors as problem+json `errors`: the field each names, and its message."""
    found = []
    for error in errors:
        loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path")]
        # A model-level check names no location; the error it raised may name the field.
        named = getattr((error.get("ctx") or {}).get("error"), "field", None)
        field = ".".join(loc) or (named if isinstance(named, str) else "body")
        message = str(error.get("msg", "invalid"))
        if error.get("type") == "json_invalid":
            field, message = "body", "malformed JSON"
        found.append({"field": field, "message": message.removeprefix("Value error, ")})
    return found
