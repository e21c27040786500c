"""The calendars a claim reads, in memory: `CalendarReader`."""

from __future__ import annotations

from takt.models.calendars import Calendar
from takt.store.errors import NotFoundError


class FakeCalendars:
    """Calendars by (tenant, name); a missing one is NotFoundError, as in `CalendarStore`."""

    def __init__(self) -> None:
        self.calendars: dict[tuple[str, str], Calendar] = {}

    def put(self, tenant_id: str, calendar: Calendar) -> Calendar:
        self.calendars[(tenant_id, calendar.name)] = calendar
        return calendar

    def get(self, tenant_id: str, name: str) -> Calendar:
        try:
            return self.calendars[(tenant_id, name)]
        except KeyError:
            raise NotFoundError(name) from None
