"""Instants in request bodies: aware, and within the years whose RFC 3339 form reads back.

Every instant is stored and answered in UTC with a four-digit year; one outside FIRST_YEAR-
LAST_YEAR there could not be written back as it reads, nor be indexed, and an offset can push
`9999-12-31T23:59-23:59` past the last instant a datetime holds (comparing it then raises).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, Field

FIRST_YEAR, LAST_YEAR = 1000, 9999


def _in_range(value: datetime) -> datetime:
    """The instant in UTC, refused when it falls outside years FIRST_YEAR-LAST_YEAR there (an
    offset can push `9999-12-31T23:59-23:59` past year 9999, which no datetime holds)."""
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"the instant in UTC is outside years {FIRST_YEAR}-{LAST_YEAR}") from None
    if not FIRST_YEAR <= utc.year <= LAST_YEAR:
        raise ValueError(f"the instant in UTC is outside years {FIRST_YEAR}-{LAST_YEAR}")
    return utc


Instant = Annotated[
    AwareDatetime,
    AfterValidator(_in_range),
    Field(
        description=f"RFC 3339 with an offset; in UTC, between the years {FIRST_YEAR} and "
        f"{LAST_YEAR}",
        json_schema_extra={"pattern": "^[1-9][0-9]{3}-"},
    ),
]
