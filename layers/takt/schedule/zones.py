"""IANA time zones: which names takt accepts, and the checks every public function shares."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from takt.schedule.exceptions import ScheduleError

# Zone names are path-like keys ("America/Argentina/Buenos_Aires", "Etc/GMT+7"). Checking the shape
# first keeps odd input (spaces, dots, absolute paths, NUL bytes) away from the file lookup.
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*")

# "localtime" is a copy of the host's own zone on many systems: a schedule in it would change
# meaning with the machine that evaluates it, which breaks "one code base, two ways to run".
_HOST_DEPENDENT = frozenset({"localtime"})


def validate_time_zone(tz: str) -> str:
    """Return `tz` unchanged if it names an IANA time zone, else raise ScheduleError.

    The name is kept as the caller spelled it (after the check) so what the API stores is what the
    user sent; zone lookups are case-sensitive, as IANA names are.
    """
    zone_of(tz)
    return tz


def zone_of(tz: str) -> ZoneInfo:
    """The ZoneInfo for a validated name; ZoneInfo caches instances, so this is cheap to repeat."""
    if not _ZONE_NAME.fullmatch(tz) or tz in _HOST_DEPENDENT:
        raise _unknown(tz)
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        # OSError: a key that names a directory of the zone database, such as "Europe".
        raise _unknown(tz) from exc


def _unknown(tz: str) -> ScheduleError:
    return ScheduleError(
        "time_zone", f"unknown time zone {tz!r}: use an IANA name such as 'Europe/Berlin' or 'UTC'"
    )


def require_aware(value: datetime, name: str) -> None:
    """Reject naive datetimes: an instant without an offset is ambiguous, and guessing is a bug."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}")
