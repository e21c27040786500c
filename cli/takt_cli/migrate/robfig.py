"""Kubernetes' cron (robfig/cron v3.0.1's standard parser) read as robfig reads it, and written in
takt's dialect so that it fires at the same instants.

The two dialects spell most schedules alike but read three things differently, so an expression
is never carried over as text on trust; its fields are read here the way robfig's `getRange` reads
them, and written again where takt would read the text otherwise:

- Which day fields combine with AND: robfig ANDs them when an item of either is `*` or `?` not
  stepped by more than 1 (`*`, `?`, `*/1`), so `*/2` is restricted and `0 6 */2 * 1` is odd days
  **or** Mondays; takt (Vixie) ANDs when either field's text starts with `*`. A field robfig reads
  as `*` selects every value, so an AND is written with that field as `*`, and an OR with both
  fields as explicit lists.
- `N/step` in the day of week runs to 6 in robfig (`5/2` is Fridays), to 7 (Sunday again) in takt.
- robfig refuses 7 for Sunday, whole day names, `L`, and descriptors not in lower case; it accepts
  empty list items (`1,,2`) and `*-5` (read as `*`). What robfig refuses, Kubernetes refuses too,
  so such a CronJob cannot exist and is refused here with robfig's reason.

robfig finds the next time by stepping hours in real time. That matches takt's DST policy
`gap: skip, overlap: twice` where the clock moves by one hour, but not where it moves by another
amount: across Lord Howe Island's 30-minute change a walk lands on the half hour, and a schedule
with chosen hours then misses runs (`0 9 * * *` does not run on either day the clock changes) or
gains one in the wrong hour; in Antarctica/Troll's two repeated hours a walk jumps to the second
pass and misses the repeated hour before it. takt has no rule for that, so a schedule with chosen
hours that can run on such a day is refused; one that runs every hour never steps hours and
follows the clock as takt's does.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from itertools import pairwise
from zoneinfo import ZoneInfo

from takt.schedule.cron import parse_expression
from takt_cli.migrate.model import MappingError

# robfig's descriptors, matched exactly (it does not fold case), and the five fields robfig reads
# each as (the same bits, star bits included). takt spells each descriptor the same way.
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Go's strconv.Atoi takes an int64.
_LARGEST_INT = (1 << 63) - 1
# Go's strconv.Atoi: an optional sign and ASCII digits.
_ATOI = re.compile(r"[+-]?[0-9]+")
_MONTH_NAMES = {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_DAY_NAMES = {
    name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
}
_LONGEST_MONTH = {month: calendar.monthrange(2000, month)[1] for month in range(1, 13)}
# Years scanned for a clock change that is not a whole number of hours.
_ZONE_SCAN = (2025, 2050)
_HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class _Bounds:
    name: str
    low: int
    high: int
    names: dict[str, int]


_MINUTE = _Bounds("minute", 0, 59, {})
_HOUR_FIELD = _Bounds("hour", 0, 23, {})
_DAY = _Bounds("day-of-month", 1, 31, {})
_MONTH = _Bounds("month", 1, 12, _MONTH_NAMES)
_WEEKDAY = _Bounds("day-of-week", 0, 6, _DAY_NAMES)
_FIELDS = (_MINUTE, _HOUR_FIELD, _DAY, _MONTH, _WEEKDAY)


@dataclass(frozen=True)
class RobfigField:
    """The values robfig selects for one field, and its star bit (an unstepped `*` or `?`)."""

    values: frozenset[int]
    star: bool


@dataclass(frozen=True)
class RobfigSpec:
    """A five-field spec as robfig/cron reads it."""

    minutes: RobfigField
    hours: RobfigField
    days: RobfigField
    months: RobfigField
    weekdays: RobfigField

    @property
    def days_and(self) -> bool:
        """robfig ANDs the day fields when either has its star bit, and ORs them otherwise."""
        return self.days.star or self.weekdays.star

    def runs_on(self, day: date) -> bool:
        """Whether the spec selects `day` (robfig's month check and dayMatches)."""
        if day.month not in self.months.values:
            return False
        in_days = day.day in self.days.values
        in_weekdays = day.isoweekday() % 7 in self.weekdays.values
        return in_days and in_weekdays if self.days_and else in_days or in_weekdays


def read(text: str) -> RobfigSpec:
    """`text` (five fields) as robfig's standard parser reads it, or MappingError saying why."""
    fields = text.split()
    if len(fields) != 5:
        raise MappingError(
            f"{text!r}: a CronJob's schedule has five fields (minute hour day-of-month month "
            f"day-of-week), not {len(fields)}"
        )
    minutes, hours, days, months, weekdays = (
        _field(field, bounds, text) for field, bounds in zip(fields, _FIELDS, strict=True)
    )
    return RobfigSpec(minutes, hours, days, months, weekdays)


def to_takt(text: str, zone: str) -> str:
    """The takt expression that fires when robfig fires `text` in `zone`, or MappingError."""
    if text.startswith("@"):
        if text not in DESCRIPTORS:
            raise MappingError(
                f"{text!r}: Kubernetes refuses it (robfig/cron knows "
                f"{', '.join(sorted(DESCRIPTORS))}, in lower case)"
            )
        check_zone(text, zone)
        return text
    spec = read(text)
    check_zone(text, zone)
    expression = _written(text, spec)
    try:
        parse_expression(expression)
    except ValueError as exc:
        raise MappingError(f"{text!r}: {exc}") from None
    return expression


def _field(text: str, bounds: _Bounds, spec: str) -> RobfigField:
    """robfig's getField: the union of the comma-separated items, empty items skipped."""
    values: set[int] = set()
    star = False
    for item in (part for part in text.split(",") if part):
        item_values, item_star = _item(item, bounds, spec)
        values.update(item_values)
        star = star or item_star
    if not values:
        raise MappingError(f"{spec!r}: the {bounds.name} field selects nothing, so it never fires")
    return RobfigField(frozenset(values), star)


def _item(item: str, bounds: _Bounds, spec: str) -> tuple[range, bool]:
    """robfig's getRange: `*`, `?`, `N`, `N-M`, each optionally `/step` (`N/step` is N-max)."""
    span, *steps = item.split("/")
    if len(steps) > 1:
        raise _refused(spec, f"too many slashes in {item!r}")
    bounds_of = span.split("-")
    star = bounds_of[0] in ("*", "?")
    if star:
        low, high = bounds.low, bounds.high
    else:
        if len(bounds_of) > 2:
            raise _refused(spec, f"too many hyphens in {item!r}")
        low = _number(bounds_of[0], bounds, spec)
        high = _number(bounds_of[1], bounds, spec) if len(bounds_of) == 2 else low
    step = 1
    if steps:
        step = _number(steps[0], _Bounds(bounds.name, 0, _LARGEST_INT, {}), spec)
        if len(bounds_of) == 1:
            high = bounds.high
        star = star and step <= 1
    if low < bounds.low or high > bounds.high:
        raise _refused(
            spec, f"{item!r} is outside the {bounds.name} range {bounds.low}-{bounds.high}"
        )
    if low > high:
        raise _refused(spec, f"range {item!r} runs backwards")
    if step == 0:
        raise _refused(spec, f"step of {item!r} is 0")
    return range(low, high + 1, step), star


def _number(text: str, bounds: _Bounds, spec: str) -> int:
    named = bounds.names.get(text.lower())
    if named is not None:
        return named
    if not _ATOI.fullmatch(text):
        raise _refused(spec, f"{text!r} is not a {bounds.name} value")
    value = int(text)
    if value < 0:
        raise _refused(spec, f"negative number {text!r}")
    if value > _LARGEST_INT:
        raise _refused(spec, f"{text!r} is out of range")
    return value


def _refused(spec: str, reason: str) -> MappingError:
    return MappingError(f"{spec!r}: Kubernetes refuses it (robfig/cron: {reason})")


def _written(text: str, spec: RobfigSpec) -> str:
    """takt's text for `spec`: each field as written where takt reads it the same, else as an
    explicit list, with the day fields spelled so that takt combines them as robfig does."""
    minutes, hours, days, months, weekdays = text.split()
    day_values = spec.days.values
    if spec.days_and and not spec.weekdays.star:
        # Only the day of week decides within the day of month's `*`.
        days_text, weekdays_text = "*", _list(spec.weekdays.values, _WEEKDAY, weekdays)
    elif spec.days_and:
        longest = max(_LONGEST_MONTH[month] for month in spec.months.values)
        day_values = frozenset(day for day in day_values if day <= longest)
        if not day_values:
            raise MappingError(f"{text!r}: none of its days is in its months, so it never fires")
        days_text, weekdays_text = _list(day_values, _DAY, days), "*"
    else:
        days_text = _list(day_values, _DAY, days, restricted=True)
        weekdays_text = _list(spec.weekdays.values, _WEEKDAY, weekdays, restricted=True)
    return " ".join(
        [
            _list(spec.minutes.values, _MINUTE, minutes),
            _list(spec.hours.values, _HOUR_FIELD, hours),
            days_text,
            _list(spec.months.values, _MONTH, months),
            weekdays_text,
        ]
    )


def _list(
    values: frozenset[int], bounds: _Bounds, written: str, *, restricted: bool = False
) -> str:
    """A field's text for takt: as written when takt reads it as these values (and, for a day
    field that must stay restricted, it does not start with `*`), else a list of ranges."""
    if (
        written
        and not (restricted and written.startswith("*"))
        and _takt_reads(written, bounds) == values
    ):
        return written
    full = frozenset(range(bounds.low, bounds.high + 1))
    if values == full and not restricted:
        return "*"
    return spelled(values)


def spelled(values: frozenset[int]) -> str:
    """A set of values as both dialects read it alike: `a-b/step` for an evenly spaced set of three
    or more (`1-31/2`), else a list of values and ranges (`1,3-6`); never starting with `*`."""
    ordered = sorted(values)
    steps = {later - earlier for earlier, later in pairwise(ordered)}
    if len(ordered) > 2 and len(steps) == 1 and steps != {1}:
        return f"{ordered[0]}-{ordered[-1]}/{steps.pop()}"
    runs: list[list[int]] = []
    for value in ordered:
        if runs and value == runs[-1][-1] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    return ",".join(
        f"{run[0]}-{run[-1]}" if len(run) > 2 else ",".join(str(v) for v in run) for run in runs
    )


def _takt_reads(written: str, bounds: _Bounds) -> frozenset[int] | None:
    """The values takt reads in `written` as the field `bounds`, or None if takt refuses it."""
    fields = ["0", "0", "1", "1", "*"]
    position = _FIELDS.index(bounds)
    fields[position] = written
    try:
        parsed = parse_expression(" ".join(fields))
    except ValueError:
        return None
    field = (parsed.minutes, parsed.hours, parsed.days, parsed.months, parsed.weekdays)[position]
    return field.values


def check_zone(text: str, zone: str) -> None:
    """Refuse robfig's `text` (five fields or a descriptor) when it has chosen hours and can run
    on a day when `zone`'s clock changes by other than one hour: only on such a day does robfig's
    hour walk leave takt's DST rule."""
    spec = read(DESCRIPTORS.get(text, text))
    if spec.hours.values == frozenset(range(24)):
        return
    for day, shift in _changes_other_than_an_hour(zone):
        if spec.runs_on(day):
            raise MappingError(
                f"{text!r}: {zone}'s clock changes by {_span(shift)} on {day.isoformat()}, and "
                f"{CHANGE_DAY}: robfig/cron (Kubernetes) steps hours in real time, so on such a "
                "day it misses or adds runs of a schedule with chosen hours; takt cannot say that"
            )


CHANGE_DAY = "only a clock change of one hour keeps robfig's runs"


def _span(shift: timedelta) -> str:
    minutes = abs(shift) // timedelta(minutes=1)
    return f"{minutes // 60} hours" if minutes % 60 == 0 else f"{minutes} minutes"


@lru_cache(maxsize=64)
def _changes_other_than_an_hour(zone: str) -> tuple[tuple[date, timedelta], ...]:
    """The local dates on which `zone`'s UTC offset changes by other than one hour, and by how
    much, in the years scanned."""
    tz = ZoneInfo(zone)
    step = timedelta(minutes=30)
    t = datetime(_ZONE_SCAN[0], 1, 1, tzinfo=UTC)
    end = datetime(_ZONE_SCAN[1], 1, 1, tzinfo=UTC)
    found = []
    offset = t.astimezone(tz).utcoffset()
    while t < end:
        # A day at a time, then in half hours across a day in which the offset changed.
        later = t + timedelta(days=1)
        if later.astimezone(tz).utcoffset() != offset:
            while t < later:
                now = (t + step).astimezone(tz).utcoffset()
                if now is not None and offset is not None and now != offset:
                    if abs(now - offset) != _HOUR:
                        found.append(((t + step).astimezone(tz).date(), now - offset))
                    offset = now
                t += step
        t = later
    return tuple(found)


def from_takt(expr: str) -> str:
    """robfig's spelling of the takt expression `expr` (a CronJob fires when the job does), or
    MappingError when robfig cannot say it."""
    parsed = parse_expression(expr)
    if parsed.seconds is not None:
        raise MappingError(f"{expr!r}: a CronJob's schedule has no seconds field")
    if parsed.last_day:
        raise MappingError(f"{expr!r}: Kubernetes' cron has no 'L'")
    if expr.startswith("@"):
        return expr.lower()
    minutes, hours, days, months, weekdays = expr.split()
    all_days = parsed.days.values == frozenset(range(1, 32))
    all_weekdays = parsed.weekdays.values == frozenset(range(7))
    if parsed.day_or:
        days = _robfig_list(days, parsed.days.values, _DAY, restricted=True)
        weekdays = _robfig_list(weekdays, parsed.weekdays.values, _WEEKDAY, restricted=True)
    elif all_days:
        days, weekdays = "*", _robfig_list(weekdays, parsed.weekdays.values, _WEEKDAY)
    elif all_weekdays:
        days, weekdays = _robfig_list(days, parsed.days.values, _DAY), "*"
    else:
        raise MappingError(
            f"{expr!r}: takt ANDs these day fields, and Kubernetes' cron ANDs two day fields only "
            "when one of them is '*'"
        )
    fields = [
        _robfig_list(minutes, parsed.minutes.values, _MINUTE),
        _robfig_list(hours, parsed.hours.values, _HOUR_FIELD),
        days,
        _robfig_list(months, parsed.months.values, _MONTH),
        weekdays,
    ]
    return " ".join(fields)


def _robfig_list(
    written: str, values: frozenset[int], bounds: _Bounds, *, restricted: bool = False
) -> str:
    """A field as written when robfig reads it as `values` (without its star bit, for a day
    field that must stay restricted), else spelled out."""
    try:
        found = _field(written, bounds, written)
    except MappingError:
        found = None
    if found is not None and found.values == values and not (restricted and found.star):
        return written
    if values == frozenset(range(bounds.low, bounds.high + 1)) and not restricted:
        return "*"
    return spelled(values)
