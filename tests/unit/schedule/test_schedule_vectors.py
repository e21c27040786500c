"""takt's cron against the public test vectors of other cron libraries (tests/data/cron).

Every vector in a dialect takt supports, whose DST rule (if any) is Vixie cron's, must pass, except
the ones listed with a reason in not_followed.json. That list is checked too: it may only name
vectors that exist, and each of them must really disagree with takt, so a fix cannot leave a stale
excuse behind.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from takt.schedule import CronSchedule, ScheduleError, next_after, parse_cron

DATA = Path(__file__).resolve().parents[2] / "data" / "cron"
SUPPORTED_DIALECTS = frozenset({"5field", "6field"})
# Dialects in invalid.jsonl whose expressions are 5 or 6 fields or macros, as takt's are.
INVALID_DIALECTS = frozenset({"5field", "6field", "croniter", "any"})


def _lines(name: str) -> dict[int, dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as handle:
        return {number: json.loads(line) for number, line in enumerate(handle, start=1)}


VECTORS = _lines("vectors.jsonl")
INVALID = _lines("invalid.jsonl")
NOT_FOLLOWED: dict[str, Any] = json.loads((DATA / "not_followed.json").read_text("utf-8"))
SKIPPED = {entry["line"]: entry for entry in NOT_FOLLOWED["vectors"]}
ACCEPTED = {entry["line"]: entry for entry in NOT_FOLLOWED["accepted_invalid"]}


def _in_scope(vector: dict[str, Any]) -> bool:
    policy = (vector.get("dst") or {}).get("policy")
    return vector["dialect"] in SUPPORTED_DIALECTS and (
        policy is None or policy.startswith("vixie")
    )


IN_SCOPE = [number for number, vector in VECTORS.items() if _in_scope(vector)]
FOLLOWED = [number for number in IN_SCOPE if number not in SKIPPED]
MUST_REJECT = [
    number
    for number, entry in INVALID.items()
    if entry["dialect"] in INVALID_DIALECTS and number not in ACCEPTED
]


def _takt_answer(vector: dict[str, Any]) -> list[datetime] | None:
    """takt's occurrences for a vector, chained from `from`; None when takt refuses it."""
    try:
        schedule = parse_cron(vector["expr"], vector["tz"])
    except ScheduleError:
        return None
    return _chain(schedule, datetime.fromisoformat(vector["from"]), len(vector["next"]))


def _chain(schedule: CronSchedule, start: datetime, count: int) -> list[datetime]:
    found: list[datetime] = []
    current = start
    for _ in range(count):
        following = next_after(schedule, current)
        assert following is not None
        found.append(following)
        current = following
    return found


@pytest.mark.parametrize("line", FOLLOWED, ids=lambda line: f"vectors.jsonl:{line}")
def test_vector_gives_the_same_occurrences(line: int) -> None:
    vector = VECTORS[line]
    expected = [datetime.fromisoformat(instant) for instant in vector["next"]]
    if not expected:
        # "Parses but never fires" in the source; takt refuses such an expression up front.
        with pytest.raises(ScheduleError, match="never fire"):
            parse_cron(vector["expr"], vector["tz"])
        return
    assert _takt_answer(vector) == expected, vector.get("note")


@pytest.mark.parametrize("line", MUST_REJECT, ids=lambda line: f"invalid.jsonl:{line}")
def test_invalid_expression_is_rejected(line: int) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_cron(INVALID[line]["expr"])
    assert caught.value.field == "schedule"
    assert "\n" not in str(caught.value)


def test_every_skipped_vector_exists_and_has_a_known_reason() -> None:
    for line, entry in SKIPPED.items():
        vector = VECTORS[line]
        assert (vector["expr"], vector["from"]) == (entry["expr"], entry["from"]), line
        assert line in IN_SCOPE, f"line {line} is outside the supported dialects anyway"
        assert entry["reason"] in NOT_FOLLOWED["reasons"], line


def test_every_skipped_vector_really_disagrees_with_takt() -> None:
    for line in SKIPPED:
        vector = VECTORS[line]
        expected = [datetime.fromisoformat(instant) for instant in vector["next"]]
        assert _takt_answer(vector) != expected, f"vectors.jsonl:{line} passes: unlist it"


def test_every_accepted_invalid_expression_exists_and_is_accepted() -> None:
    for line, entry in ACCEPTED.items():
        invalid = INVALID[line]
        assert invalid["expr"] == entry["expr"], line
        assert invalid["dialect"] in INVALID_DIALECTS, line
        assert entry["reason"] in NOT_FOLLOWED["reasons"], line
        parse_cron(invalid["expr"])


def test_most_supported_vectors_are_followed() -> None:
    # A guard against a data or filter change that quietly empties the parametrized tests.
    assert len(IN_SCOPE) > 600
    assert len(FOLLOWED) > 500
