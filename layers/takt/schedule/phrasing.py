"""Schedules in plain words, for the CLI and the console.

Only common shapes get a sentence ("at 06:00 every day", "every 15 minutes on Monday to Friday");
anything else is shown as its expression, because a wrong sentence is worse than none.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from takt.clock import format_time
from takt.schedule.cron import MONTHS, WEEKDAYS, CronExpression, CronField, parse_expression
from takt.schedule.model import CronSchedule, IntervalSchedule, OneOffSchedule, Schedule

_UNITS = (
    (timedelta(days=1), "day"),
    (timedelta(hours=1), "hour"),
    (timedelta(minutes=1), "minute"),
    (timedelta(seconds=1), "second"),
    (timedelta(milliseconds=1), "millisecond"),
    (timedelta(microseconds=1), "microsecond"),
)


def describe(schedule: Schedule) -> str:
    """A short English description, e.g. "at 06:00 every day (Europe/Berlin)"."""
    if isinstance(schedule, OneOffSchedule):
        return f"once at {format_time(schedule.run_at)}"
    if isinstance(schedule, IntervalSchedule):
        return f"every {_length(schedule.every)} from {format_time(schedule.anchor)}"
    return _describe_cron(schedule)


def _describe_cron(schedule: CronSchedule) -> str:
    expression = parse_expression(schedule.expr)
    when = _time_phrase(expression)
    days = _day_phrase(expression)
    months = _month_phrase(expression)
    if when is None or days is None or months is None:
        sentence = f"on cron schedule {schedule.expr!r}"
    elif days == "every day" and when.startswith("every"):
        sentence = f"{when}{months}"
    else:
        sentence = f"{when} {days}{months}"
    notes = [schedule.tz]
    if not expression.follows_clock:
        if schedule.dst.gap == "skip":
            notes.append("skipped if DST skips its time")
        if schedule.dst.overlap == "twice":
            notes.append("twice if DST repeats its time")
    return f"{sentence} ({'; '.join(notes)})"


def _time_phrase(expression: CronExpression) -> str | None:
    seconds = expression.seconds.values if expression.seconds is not None else frozenset({0})
    minutes, hours = expression.minutes.values, expression.hours.values
    if len(seconds) == 1 and len(minutes) == 1:
        (second,), (minute,) = seconds, minutes
        return _fixed_minute_phrase(second, minute, hours)
    if hours != frozenset(range(24)):
        return None
    if len(seconds) == 1 and min(seconds) == 0:
        step = _even_step(minutes, 60)
        if step is not None:
            return "every minute" if step == 1 else f"every {step} minutes"
    if minutes == frozenset(range(60)):
        step = _even_step(seconds, 60)
        if step is not None:
            return "every second" if step == 1 else f"every {step} seconds"
    return None


def _fixed_minute_phrase(second: int, minute: int, hours: frozenset[int]) -> str | None:
    """The times of a schedule firing at one second of one minute, in the given hours: each of
    up to three hours, or a run of hours as a range."""
    if len(hours) <= 3:
        return f"at {_join([_clock(hour, minute, second) for hour in sorted(hours)])}"
    if not _is_run(sorted(hours)):
        return None
    if hours == frozenset(range(24)):
        return f"every hour at {_clock_minute(minute, second)}"
    first, last = min(hours), max(hours)
    return f"every hour from {_clock(first, minute, second)} to {_clock(last, minute, second)}"


def _day_phrase(expression: CronExpression) -> str | None:
    days, weekdays = expression.days, expression.weekdays
    all_days = days.values == frozenset(range(1, 32)) and not expression.last_day
    all_weekdays = weekdays.values == frozenset(range(7))
    if all_days and all_weekdays:
        return "every day"
    if expression.day_or:
        month_days = _month_days(days, expression.last_day)
        return None if month_days is None else f"{month_days} or {_weekdays(weekdays)}"
    if all_days:
        return _weekdays(weekdays)
    if all_weekdays:
        return _month_days(days, expression.last_day)
    # Both fields narrowed but one starts with "*": Vixie ANDs them, which is rarely meant and
    # reads badly as a sentence.
    return None


def _month_phrase(expression: CronExpression) -> str | None:
    months = sorted(expression.months.values)
    if len(months) == 12:
        return ""
    if len(months) > 3:
        return None
    return " in " + _join([MONTHS[month - 1].capitalize() for month in months])


def _weekdays(field: CronField) -> str:
    days = sorted(field.values)
    if len(days) > 2 and _is_run(days):
        return f"on {_day_name(days[0])} to {_day_name(days[-1])}"
    return "on " + _join([_day_name(day) for day in days])


def _month_days(field: CronField, last_day: bool) -> str | None:
    if len(field.values) > 4:
        return None
    parts = [_ordinal(day) for day in sorted(field.values)]
    if last_day:
        parts.append("last day")
    return f"on the {_join(parts)} of the month"


def _day_name(day: int) -> str:
    return WEEKDAYS[day].capitalize()


def _even_step(values: frozenset[int], size: int) -> int | None:
    """The step of `values` if they are 0, n, 2n, ... with n dividing `size`, else None."""
    ordered = sorted(values)
    if ordered[0] != 0:
        return None
    step = ordered[1] - ordered[0] if len(ordered) > 1 else size
    if size % step == 0 and ordered == list(range(0, size, step)) and step < size:
        return step
    return None


def _is_run(values: Sequence[int]) -> bool:
    return list(values) == list(range(values[0], values[-1] + 1))


def _clock(hour: int, minute: int, second: int) -> str:
    return f"{hour:02d}:{minute:02d}" + (f":{second:02d}" if second else "")


def _clock_minute(minute: int, second: int) -> str:
    return f":{minute:02d}" + (f":{second:02d}" if second else "")


def _ordinal(number: int) -> str:
    suffix = (
        "th" if 11 <= number % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    )
    return f"{number}{suffix}"


def _join(words: Sequence[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _length(every: timedelta) -> str:
    remaining = every
    parts = []
    for unit, name in _UNITS:
        count, remaining = divmod(remaining, unit)
        if count:
            parts.append(f"{count} {name}" + ("" if count == 1 else "s"))
    return " ".join(parts)
