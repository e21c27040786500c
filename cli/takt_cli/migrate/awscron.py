"""EventBridge Scheduler's cron dialect to takt's and back.

AWS's `cron(minutes hours day-of-month month day-of-week year)` is Quartz-like: day-of-week runs
1-7 from Sunday (takt's, Vixie's, runs 0-6), exactly one day field is `?`, and it has `L`, `W`,
`#` and a year field. What takt's dialect can say the same way is translated; the rest is refused
with the reason, never approximated:

- `?` becomes `*`; day-of-week numbers move down by one (names stay);
- `L` alone in the day of month stays `L` (the last day of the month);
- `X#1` (the first weekday X of the month) becomes day of month `*/31,1-7` with day of week X:
  a day field that starts with `*` makes Vixie AND the two, and `*/31` selects only the 1st, so
  the days are "the 1st to 7th that are an X". No such trick says `#2` or later exactly;
- a year (`2027`) or a range of years (`2026-2028`) becomes `start_at`/`end_at` in the zone;
- a minute or hour field starting with `*` is written as the range (`0-59`, `0-23`): AWS runs a
  time that fall-back repeats once, as it runs a fixed time, and takt runs a job whose minute or
  hour starts with `*` at both passes, so the job is made a fixed-time one (its `dst` policy,
  `overlap: once` and `gap: skip`, then applies to every time);
- `W` (nearest weekday), `L` in the day of week (last X of the month), `L-n`, `LW`, and year
  lists or steps are refused, as are what AWS refuses itself: both day fields `?` or neither,
  and a year outside 1970-2199.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from takt.schedule.cron import MACROS, parse_expression
from takt_cli.migrate.model import MappingError

_YEAR = re.compile(r"(?P<first>\d{4})(?:-(?P<last>\d{4}))?")
_NUMBER = re.compile(r"\d+")
_FIRST_WEEK_DAYS = "*/31,1-7"
AWS_YEARS = (1970, 2199)
# The fixed-time spelling of a minute or hour field that starts with `*`, and back.
_WHOLE_RANGE = {"minutes": "0-59", "hours": "0-23"}


@dataclass(frozen=True)
class TaktCron:
    """A translated expression, and the years it is limited to (None: every year)."""

    expr: str
    first_year: int | None = None
    last_year: int | None = None

    def window(self, tz: str) -> tuple[datetime | None, datetime | None]:
        """(start_at, end_at) that limit the schedule to its years, in zone `tz`."""
        if self.first_year is None or self.last_year is None:
            return None, None
        zone = ZoneInfo(tz)
        start = datetime(self.first_year, 1, 1, tzinfo=zone)
        end = datetime(self.last_year + 1, 1, 1, tzinfo=zone) - timedelta(milliseconds=1)
        return start, end


def from_aws(text: str) -> TaktCron:
    """The takt cron expression that fires when AWS's `cron(...)` body `text` does."""
    fields = text.split()
    if len(fields) != 6:
        raise MappingError(
            f"cron({text}): AWS cron has six fields (minutes hours day-of-month month "
            f"day-of-week year), got {len(fields)}"
        )
    minute, hour, day, month, weekday, year = fields
    for name, value in (("minutes", minute), ("hours", hour), ("month", month)):
        # `?`, `#`, and L or W as items of their own (names such as JUL contain an L).
        if re.search(r"[?#]|\b[0-9]*[LW][0-9]*\b", value, re.IGNORECASE):
            raise MappingError(f"cron({text}): {value!r} is not valid in the {name} field")
    if (day == "?") == (weekday == "?"):
        raise MappingError(
            f"cron({text}): AWS needs '?' in exactly one of the day-of-month and day-of-week fields"
        )
    minute, hour = _fixed(minute, "minutes"), _fixed(hour, "hours")
    day = _day_of_month(text, day)
    weekday, first_week = _day_of_week(text, weekday)
    if first_week:
        if day != "*":
            raise MappingError(f"cron({text}): '#' needs '?' in the day-of-month field")
        day = _FIRST_WEEK_DAYS
    first_year, last_year = _years(text, year)
    expr = f"{minute} {hour} {day} {month} {weekday}"
    try:
        parse_expression(expr)
    except ValueError as exc:
        raise MappingError(f"cron({text}): {exc}") from None
    return TaktCron(expr, first_year, last_year)


def _day_of_month(text: str, value: str) -> str:
    upper = value.upper()
    if upper == "?":
        return "*"
    if "W" in upper:
        raise MappingError(
            f"cron({text}): 'W' (the weekday nearest a day) has no equivalent in takt's cron"
        )
    if "L" in upper and upper != "L":
        raise MappingError(
            f"cron({text}): only a plain 'L' (the last day of the month) maps to takt's cron"
        )
    return upper if upper == "L" else value


def _day_of_week(text: str, value: str) -> tuple[str, bool]:
    """(takt's day-of-week field, whether it came from `X#1`)."""
    upper = value.upper()
    if upper in ("?", "*"):
        return "*", False
    if "L" in upper:
        raise MappingError(
            f"cron({text}): 'L' in the day of week (the last such day of the month) has no "
            "equivalent in takt's cron"
        )
    if "#" in upper:
        day, _, nth = upper.partition("#")
        if nth != "1" or "," in day or "-" in day or "/" in day:
            raise MappingError(
                f"cron({text}): takt's cron can say only the first weekday of the month "
                f"('X#1'), not {value!r}"
            )
        return _shift_days(day), True
    return ",".join(_shift_item(text, item) for item in upper.split(",")), False


def _shift_item(text: str, item: str) -> str:
    span, slash, step = item.partition("/")
    if span == "*":
        if slash:
            raise MappingError(
                f"cron({text}): '*/{step}' counts AWS's weekdays from Sunday=1; write the days"
            )
        return "*"
    return _shift_days(span) + (f"/{step}" if slash else "")


def _shift_days(span: str) -> str:
    """AWS numbers Sunday 1 to Saturday 7; takt numbers them 0 to 6 (names are the same)."""
    return _NUMBER.sub(lambda m: str(_aws_day(int(m.group()))), span)


def _aws_day(number: int) -> int:
    if not 1 <= number <= 7:
        raise MappingError(f"day-of-week value {number} is out of AWS's range 1-7")
    return number - 1


def _years(text: str, value: str) -> tuple[int | None, int | None]:
    if value in ("*", "?"):
        return None, None
    found = _YEAR.fullmatch(value)
    if found is None:
        raise MappingError(
            f"cron({text}): takt maps a year or a range of years to start_at/end_at, not {value!r}"
        )
    first = int(found.group("first"))
    last = int(found.group("last") or first)
    if not AWS_YEARS[0] <= first <= last <= AWS_YEARS[1]:
        if last < first:
            raise MappingError(f"cron({text}): year range {value!r} runs backwards")
        raise MappingError(
            f"cron({text}): year {value!r} is outside AWS's range {AWS_YEARS[0]}-{AWS_YEARS[1]}"
        )
    return first, last


def _fixed(value: str, name: str) -> str:
    """A minute or hour field that starts with `*`, as the same values written as a range."""
    return _WHOLE_RANGE[name] + value[1:] if value.startswith("*") else value


def _starred(value: str, name: str) -> str:
    """The field `_fixed` wrote, as AWS's examples spell it (`0-59/15` as `*/15`)."""
    rest = value.removeprefix(_WHOLE_RANGE[name])
    return "*" + rest if rest != value and rest[:1] in ("", "/") else value


def to_aws(expr: str) -> str:
    """AWS's `cron(...)` body for a takt expression; MappingError when AWS cannot say it.

    AWS restricts one day field at most (the other is `?`), so takt's two restricted day fields
    map back only when one of them selects every day, or when they are the `X#1` form above.
    """
    parsed = parse_expression(expr)
    fields = (MACROS[expr.lower()] if expr.startswith("@") else expr).split()
    if parsed.seconds is not None:
        if parsed.seconds.values != frozenset({0}):
            raise MappingError(f"{expr!r}: AWS cron has no seconds field")
        fields = fields[1:]
    minute, hour, day, month, _ = fields
    minute, hour = _starred(minute, "minutes"), _starred(hour, "hours")
    every_day = parsed.days.values == frozenset(range(1, 32)) and not parsed.last_day
    every_weekday = parsed.weekdays.values == frozenset(range(7))
    weekdays = ",".join(str(value + 1) for value in sorted(parsed.weekdays.values))
    if every_weekday and (every_day or not parsed.day_or):
        return f"{minute} {hour} {day if not every_day else '*'} {month} ? *"
    if every_day and not parsed.day_or:
        return f"{minute} {hour} ? {month} {weekdays} *"
    first_week = parsed.days.star and parsed.days.values == frozenset(range(1, 8))
    if first_week and not parsed.last_day and len(parsed.weekdays.values) == 1:
        return f"{minute} {hour} ? {month} {weekdays}#1 *"
    raise MappingError(
        f"{expr!r}: AWS cron cannot restrict both the day of month and the day of week"
    )
