"""Schedules: parse them, check them, and compute when they fire.

Pure functions only: nothing here reads a clock or touches AWS, so the API, the scheduler, the CLI
and the tests all get the same answers for the same inputs. See docs/SCHEDULES.md for the cron
dialect and the DST rule.
"""

from takt.schedule.dst import DstPolicy
from takt.schedule.durations import parse_duration
from takt.schedule.exceptions import ScheduleError
from takt.schedule.jitter import jitter_offset
from takt.schedule.model import (
    CronSchedule,
    IntervalSchedule,
    OneOffSchedule,
    Schedule,
    parse_cron,
)
from takt.schedule.phrasing import describe
from takt.schedule.timeline import next_after, occurrences, preview
from takt.schedule.zones import validate_time_zone

__all__ = [
    "CronSchedule",
    "DstPolicy",
    "IntervalSchedule",
    "OneOffSchedule",
    "Schedule",
    "ScheduleError",
    "describe",
    "jitter_offset",
    "next_after",
    "occurrences",
    "parse_cron",
    "parse_duration",
    "preview",
    "validate_time_zone",
]
