"""takt's cron dialect: parsed and checked here, evaluated on wall-clock time by croniter.

The dialect is Vixie cron's five fields (minute, hour, day of month, month, day of week), an
optional leading seconds field, and the `@daily`-style macros. takt parses the text itself and hands
croniter an explicit, normalized expression, so croniter's own extensions and quirks never reach
users: croniter reads `5-5` as the whole range, accepts Quartz's `?`, `W`, `#` and Jenkins' `H`, and
by default ORs a day-of-month that starts with `*` with a restricted day-of-week, which Vixie does
not. Everything croniter sees is a plain list of numbers, `*`, or `L`.
"""

from __future__ import annotations

import calendar
import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from croniter import croniter

from takt.schedule.exceptions import ScheduleError

MAX_EXPRESSION_LENGTH = 1000
"""Longer text is refused before parsing: every real expression is far shorter, and the bound
keeps a request from making the parser build huge sets."""

MACROS: Mapping[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# English names, spelled out here because `calendar`'s follow the process locale. Vixie accepts
# the first three letters; whole names are accepted too, as they cannot be misread.
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
# Vixie numbers Sunday 0 (and also accepts 7); names follow the same numbering.
WEEKDAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
_MONTH_NAMES = {
    spelling: number for number, name in enumerate(MONTHS, start=1) for spelling in (name, name[:3])
}
_DAY_NAMES = {
    spelling: number for number, name in enumerate(WEEKDAYS) for spelling in (name, name[:3])
}

# Only ASCII digits: `\d` would also accept digits from other scripts.
_NUMBER = re.compile(r"[0-9]+")
# Quartz's "last" and "nearest weekday" forms: L, LW, 15W, W15, 5L, L5, WedL, L-3.
_QUARTZ_LAST_OR_WEEKDAY = re.compile(r"[0-9]*(?:L|W|LW)[0-9]*|[A-Z]{3}L|L-[0-9]+")
# croniter looks up to 50 years ahead, so from here on a search may run past datetime.max.
_END_OF_CALENDAR_SEARCH = 9999 - 50
# The longest month has 31 days; February counts 29 because leap years exist.
_LONGEST_MONTH = {month: calendar.monthrange(2000, month)[1] for month in range(1, 13)}


@dataclass(frozen=True)
class _Field:
    """How one cron field is spelled: its name, its range and the names it accepts."""

    name: str
    low: int
    high: int
    names: Mapping[str, int]


_SECOND = _Field("second", 0, 59, {})
_MINUTE = _Field("minute", 0, 59, {})
_HOUR = _Field("hour", 0, 23, {})
_DAY = _Field("day-of-month", 1, 31, {})
_MONTH = _Field("month", 1, 12, _MONTH_NAMES)
_WEEKDAY = _Field("day-of-week", 0, 7, _DAY_NAMES)


@dataclass(frozen=True)
class CronField:
    """The values one field selects, and whether its text starts with `*`.

    The `*` flag is Vixie cron's: it decides how day-of-month and day-of-week combine and which DST
    rule a job follows, so `*/2` counts as unrestricted even though it selects only some values.
    """

    values: frozenset[int]
    star: bool


@dataclass(frozen=True)
class CronExpression:
    """A parsed, valid cron expression in takt's dialect."""

    text: str
    seconds: CronField | None
    minutes: CronField
    hours: CronField
    days: CronField
    last_day: bool
    months: CronField
    weekdays: CronField

    @property
    def follows_clock(self) -> bool:
        """True when the minute or the hour field starts with `*`: the job follows the wall clock
        through DST changes instead of running once per local time."""
        return self.minutes.star or self.hours.star

    @property
    def day_or(self) -> bool:
        """Vixie cron ORs day-of-month and day-of-week only when neither starts with `*`."""
        return not self.days.star and not self.weekdays.star

    def croniter_form(self) -> tuple[str, bool]:
        """The expression as croniter should read it (explicit lists, seconds last), and its
        `day_or` flag.

        croniter evaluates an OR of the two day fields as two searches and fails outright when one
        of them can never match, so day-of-month values that no chosen month has are left out:
        "0 0 31 2 0" is Sundays in February, as Vixie cron runs it.
        """
        day_or = self.day_or
        days = sorted(self.days.values)
        if day_or:
            longest = max(_LONGEST_MONTH[month] for month in self.months.values)
            days = [day for day in days if day <= longest]
        day_items = [str(day) for day in days] + (["L"] if self.last_day else [])
        weekdays = _croniter_list(self.weekdays.values, _WEEKDAY)
        if not day_items:
            # Only the day-of-week can fire: a lone day-of-week is "any day of the month AND it".
            day_items, day_or = ["*"], False
        elif day_or:
            # croniter only ORs two fields that are not "*", so a full week ("0-6") stays a list.
            weekdays = ",".join(str(day) for day in sorted(self.weekdays.values))
        fields = [
            _croniter_list(self.minutes.values, _MINUTE),
            _croniter_list(self.hours.values, _HOUR),
            ",".join(day_items),
            _croniter_list(self.months.values, _MONTH),
            weekdays,
        ]
        if self.seconds is not None:
            fields.append(_croniter_list(self.seconds.values, _SECOND))
        return " ".join(fields), day_or


class WallClock:
    """Successive naive wall-clock times that match an expression, computed by croniter.

    croniter is given naive datetimes, so it does pure calendar arithmetic and none of its own DST
    handling: that is `takt.schedule.dst`'s job.
    """

    def __init__(self, expression: CronExpression, wall: datetime) -> None:
        # Building a croniter parses its expression, which is most of the cost of a call; a shallow
        # copy of a cached one is safe because croniter copies its parsed fields before changing
        # them, and keeps nothing else but its position, which set_current replaces.
        self._iterator = copy.copy(_parsed_by_croniter(expression))
        self._wall = _whole_second(wall)
        self._iterator.set_current(self._wall, force=True)

    def next(self) -> datetime | None:
        """The next matching wall time, or None when it would fall after the year 9999."""
        try:
            result: datetime = self._iterator.get_next(datetime)
        except (OverflowError, ValueError):
            # croniter searches up to 50 years ahead and fails when that runs off the calendar.
            # Anywhere else the error is a bug, and must not pass for "no more occurrences".
            if self._wall.year < _END_OF_CALENDAR_SEARCH:
                raise
            return None
        self._wall = result
        return result

    def skip_to(self, wall: datetime) -> None:
        """Continue from `wall` (exclusive), e.g. past a gap whose wall times cannot run."""
        self._wall = _whole_second(wall)
        self._iterator.set_current(self._wall, force=True)


@lru_cache(maxsize=2048)
def _parsed_by_croniter(expression: CronExpression) -> croniter:
    text, day_or = expression.croniter_form()
    return croniter(text, datetime(2000, 1, 1), ret_type=datetime, day_or=day_or)


def _whole_second(wall: datetime) -> datetime:
    # croniter goes through float timestamps; handing it whole seconds keeps microseconds from
    # rounding across a second boundary. Matches are whole seconds, so "after" is unchanged.
    return wall.replace(microsecond=0)


def _croniter_list(values: frozenset[int], spec: _Field) -> str:
    full = set(range(spec.low, spec.high + 1)) - ({7} if spec is _WEEKDAY else set())
    if values == full:
        return "*"
    return ",".join(str(value) for value in sorted(values))


def parse_expression(text: str) -> CronExpression:
    """Parse `text` in takt's dialect, or raise ScheduleError(field="schedule") saying why."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ScheduleError(
            "schedule", f"cron expression is longer than {MAX_EXPRESSION_LENGTH} characters"
        )
    return _parse_normalized(" ".join(text.split()))


@lru_cache(maxsize=2048)
def _parse_normalized(text: str) -> CronExpression:
    """Cached: the scheduler evaluates the same few expressions over and over."""
    fields = _split(text)
    if len(fields) == 6:
        seconds: CronField | None = _parse_field(fields[0], _SECOND, text)[0]
        fields = fields[1:]
    else:
        seconds = None
    minutes = _parse_field(fields[0], _MINUTE, text)[0]
    hours = _parse_field(fields[1], _HOUR, text)[0]
    days, last_day = _parse_field(fields[2], _DAY, text)
    months = _parse_field(fields[3], _MONTH, text)[0]
    weekdays = _parse_field(fields[4], _WEEKDAY, text)[0]
    expression = CronExpression(
        text=text,
        seconds=seconds,
        minutes=minutes,
        hours=hours,
        days=days,
        last_day=last_day,
        months=months,
        weekdays=weekdays,
    )
    _check_days_exist(expression)
    return expression


def _split(text: str) -> list[str]:
    """The fields of an expression, with macros expanded."""
    if not text:
        raise _invalid(text, "it is empty")
    if text.startswith("@"):
        macro = text.lower()
        if macro == "@reboot":
            raise _invalid(text, "@reboot runs when a machine starts and has no time to schedule")
        if macro.startswith("@every"):
            raise _invalid(text, "@every is not cron: use an interval schedule instead")
        if macro not in MACROS:
            known = ", ".join(MACROS)
            raise _invalid(text, f"unknown macro; takt knows {known}")
        return MACROS[macro].split()
    fields = text.split(" ")
    if len(fields) in (5, 6):
        return fields
    if len(fields) == 7:
        raise _invalid(text, "7 fields: a year field is Quartz syntax, which takt does not accept")
    raise _invalid(
        text,
        f"expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds "
        f"first, got {len(fields)}",
    )


def _parse_field(text: str, spec: _Field, expression: str) -> tuple[CronField, bool]:
    """The values of one field, and whether it names `L` (only the day-of-month field can)."""
    values: set[int] = set()
    last_day = False
    for item in text.split(","):
        if spec is _DAY and item.upper() == "L":
            last_day = True
            continue
        values.update(_parse_item(item, spec, expression))
    if spec is _WEEKDAY and 7 in values:
        values = (values - {7}) | {0}
    return CronField(values=frozenset(values), star=text.startswith("*")), last_day


def _parse_item(item: str, spec: _Field, expression: str) -> Iterable[int]:
    """One list item: `*`, `N`, `N-M`, each optionally `/step`; `N/step` means `N-max/step`."""
    if not item:
        raise _invalid(expression, f"empty item in the {spec.name} field")
    _refuse_extensions(item, expression)
    base, slash, step_text = item.partition("/")
    step = _parse_step(step_text, spec, expression) if slash else 1
    if base == "*":
        low, high = spec.low, spec.high
    elif "-" in base:
        first, _, last = base.partition("-")
        low = _parse_value(first, spec, expression)
        high = _parse_value(last, spec, expression, range_from=low)
        if low > high:
            raise _invalid(
                expression,
                f"range {base} in the {spec.name} field runs backwards; write it in increasing "
                f"order or as a list",
            )
    else:
        low = _parse_value(base, spec, expression)
        high = spec.high if slash else low
    return range(low, high + 1, step)


def _parse_step(text: str, spec: _Field, expression: str) -> int:
    if not _NUMBER.fullmatch(text) or int(text) == 0:
        raise _invalid(
            expression, f"step {text!r} in the {spec.name} field must be a whole number above 0"
        )
    return int(text)


def _parse_value(text: str, spec: _Field, expression: str, *, range_from: int | None = None) -> int:
    """One value of a field; `range_from` is the start of the range it closes, if it does."""
    if _NUMBER.fullmatch(text):
        value = int(text)
        if not spec.low <= value <= spec.high:
            raise _invalid(
                expression,
                f"{spec.name} value {text} is out of range {spec.low}-{spec.high}",
            )
        return value
    named = spec.names.get(text.lower())
    if named is None:
        raise _unknown_value(text, spec, expression)
    if spec is _WEEKDAY and named == 0 and range_from is not None and range_from > 0:
        # "mon-sun": Sunday closing a range that starts after Sunday is day 7, so the range does
        # not run backwards. A range starting at Sunday ("sun-sun", "0-sun") stays at day 0:
        # read as 7 it would become the whole week.
        return 7
    return named


def _refuse_extensions(item: str, expression: str) -> None:
    """Name the Quartz syntax a user probably meant, instead of a bare "invalid value"."""
    if "?" in item:
        raise _invalid(
            expression,
            "'?' is Quartz syntax; write '*' (and note that Quartz numbers Sunday 1, takt 0 or 7)",
        )
    if "#" in item:
        raise _invalid(expression, "'#' (nth weekday of the month) is not supported")


def _unknown_value(text: str, spec: _Field, expression: str) -> ScheduleError:
    """The error for a value that is neither a number nor a name, naming the likely dialect."""
    upper = text.upper()
    if spec in (_DAY, _WEEKDAY) and _QUARTZ_LAST_OR_WEEKDAY.fullmatch(upper):
        return _invalid(
            expression,
            f"{text!r}: 'L' and 'W' forms are not supported, except 'L' alone in the "
            "day-of-month field (the last day of the month)",
        )
    if upper.startswith("H"):
        return _invalid(expression, f"{text!r}: 'H' (hashed values) is not supported")
    return _invalid(expression, f"{text!r} is not a valid {spec.name} value")


def _check_days_exist(expression: CronExpression) -> None:
    """Refuse days of the month that none of the chosen months has, such as "0 0 30 2 *".

    This catches every expression that can never fire, and the typo-level mistake of naming a date
    that does not exist ("1,30 2" for "the 1st and the 30th of February"). It applies only when the
    day of the month decides alone: a day-of-week OR'ed with it still fires every week, and a field
    starting with `*` ("*/10") is a pattern, not a list of dates.
    """
    days = expression.days
    if days.star or not expression.weekdays.star:
        return
    months = sorted(expression.months.values)
    longest = max(_LONGEST_MONTH[month] for month in months)
    missing = sorted(day for day in days.values if day > longest)
    if not missing:
        return
    names = " or ".join(MONTHS[month - 1].capitalize() for month in months)
    problem = f"there is no day {', '.join(str(day) for day in missing)} in {names}"
    if len(missing) == len(days.values) and not expression.last_day:
        raise _invalid(expression.text, f"it can never fire: {problem}")
    raise _invalid(expression.text, f"{problem}; list only days that exist")


def _invalid(expression: str, reason: str) -> ScheduleError:
    shown = expression if len(expression) <= 80 else expression[:77] + "..."
    return ScheduleError("schedule", f"invalid cron expression {shown!r}: {reason}")
