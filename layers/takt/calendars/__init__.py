"""Named calendars of blackout windows and holidays (Quartz's calendars), per tenant.

A job that names calendars has each occurrence inside one of their windows recorded as skipped,
with the calendar and the window as the reason, instead of run. `model` holds the pure rule;
`store` keeps calendars in the tenants table, under the tenant's own partition key.
"""

from takt.calendars.model import (
    Calendar,
    CalendarBody,
    CalendarCreate,
    DailyWindow,
    Window,
    blackout,
)
from takt.calendars.store import CalendarStore

__all__ = [
    "Calendar",
    "CalendarBody",
    "CalendarCreate",
    "CalendarStore",
    "DailyWindow",
    "Window",
    "blackout",
]
