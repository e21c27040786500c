"""The one error the schedule library raises for bad input."""

from __future__ import annotations

from typing import Literal

ScheduleField = Literal["schedule", "time_zone", "interval", "run_at", "dst"]


class ScheduleError(ValueError):
    """A schedule that takt will not accept, and the request field to blame.

    It subclasses ValueError so callers that only know "bad value" still catch it, while the API can
    read `field` to point its problem+json answer at the part of the request that is wrong.
    """

    def __init__(self, field: ScheduleField, message: str) -> None:
        # Both arguments go to ValueError so the error pickles and reprs with its field.
        super().__init__(field, message)
        self.field: ScheduleField = field
        self.message = message

    def __str__(self) -> str:
        return self.message
