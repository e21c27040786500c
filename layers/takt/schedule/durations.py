"""Interval lengths as people write them: "90s", "1h30m", "500ms", or ISO 8601 "PT1H30M"."""

from __future__ import annotations

import re
from datetime import timedelta

from takt.schedule.exceptions import ScheduleError

# Units in descending order, each at most once: "1h30m" reads one way only. Lower case only, so an
# "M" can never be mistaken for months.
_COMPACT = re.compile(
    r"(?:(?P<d>[0-9]+)d)?(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?:(?P<s>[0-9]+)s)?"
    r"(?:(?P<ms>[0-9]+)ms)?"
)
_ISO = re.compile(
    r"P(?:(?P<w>[0-9]+)W)?(?:(?P<d>[0-9]+)D)?"
    r"(?:T(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9]+(?:[.,][0-9]{1,6})?)S)?)?",
    re.IGNORECASE,
)
# Years and months have no fixed length, so an interval in them would drift; refuse them by name.
_ISO_CALENDAR_UNITS = re.compile(r"P[^T]*[YM]", re.IGNORECASE)

_HINT = "write it like '90s', '15m', '1h30m', '2d', '500ms' or ISO 8601 'PT1H30M'"


def parse_duration(text: str) -> timedelta:
    """The positive length `text` names, or ScheduleError(field="interval")."""
    cleaned = text.strip()
    if cleaned.startswith("-"):
        raise ScheduleError("interval", f"invalid interval {text!r}: it must be positive")
    if cleaned[:1] in ("P", "p"):
        parts = _iso_parts(cleaned, text)
    else:
        match = _COMPACT.fullmatch(cleaned)
        if match is None or not any(match.groupdict().values()):
            raise ScheduleError("interval", f"invalid interval {text!r}: {_HINT}")
        parts = {unit: float(value) for unit, value in match.groupdict().items() if value}
    try:
        length = timedelta(
            weeks=parts.get("w", 0),
            days=parts.get("d", 0),
            hours=parts.get("h", 0),
            minutes=parts.get("m", 0),
            seconds=parts.get("s", 0),
            milliseconds=parts.get("ms", 0),
        )
    except OverflowError as exc:
        raise ScheduleError("interval", f"invalid interval {text!r}: it is too long") from exc
    if length <= timedelta(0):
        raise ScheduleError("interval", f"invalid interval {text!r}: it must be positive")
    return length


def _iso_parts(cleaned: str, text: str) -> dict[str, float]:
    match = _ISO.fullmatch(cleaned)
    if match is None or cleaned[-1] in ("T", "t"):
        if _ISO_CALENDAR_UNITS.match(cleaned):
            raise ScheduleError(
                "interval",
                f"invalid interval {text!r}: years and months have no fixed length; use days",
            )
        raise ScheduleError("interval", f"invalid interval {text!r}: {_HINT}")
    values = {unit: value for unit, value in match.groupdict().items() if value}
    if not values:
        raise ScheduleError("interval", f"invalid interval {text!r}: {_HINT}")
    return {unit: float(value.replace(",", ".")) for unit, value in values.items()}
