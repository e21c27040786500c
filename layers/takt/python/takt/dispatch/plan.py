"""What to do with a job's due occurrence: pure decisions about catch-up and overlap.

A claimer that finds occurrence `due` of a job at `now` may discover that later occurrences have
also passed (the scheduler was down, or the job was paused and resumed). The job's `catchup`
policy decides which of them run and which are recorded as `skipped`:

- `all`: every missed occurrence within `catchup_window` runs; older ones are skipped.
- `once` (default): only the latest runs; the others are skipped.
- `skip`: the latest runs only if it is less than `misfire_grace` late; the rest are skipped.
A one-off job always runs, however late.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from takt.models.records import JobRecord
from takt.schedule import next_after, occurrences, parse_duration

MAX_OCCURRENCES_PER_FIRING = 1000
MISFIRE_GRACE = timedelta(seconds=60)


@dataclass(frozen=True)
class FiringPlan:
    run: list[datetime]
    skipped: list[tuple[datetime, str]] = field(default_factory=list)
    next_run: datetime | None = None


def plan_firing(job: JobRecord, due: datetime, now: datetime) -> FiringPlan:
    """Decide, from the job alone, what firing `due` at `now` means."""
    schedule = job.parsed_schedule()
    if not job.recurring:
        return FiringPlan(run=[due], next_run=None)
    later = occurrences(
        schedule,
        due,
        now,
        limit=MAX_OCCURRENCES_PER_FIRING - 1,
        start_at=job.start_at,
        end_at=job.end_at,
    )
    missed = [due, *later]
    latest = missed[-1]
    if job.catchup == "all":
        horizon = now - parse_duration(job.catchup_window)
        run = [t for t in missed if t >= horizon] or [latest]
    elif job.catchup == "once" or now - latest <= MISFIRE_GRACE:
        run = [latest]
    else:
        run = []
    running = set(run)
    skipped = [(t, f"catchup={job.catchup}") for t in missed if t not in running]
    after = max(now, latest)
    next_run = next_after(schedule, after, start_at=job.start_at, end_at=job.end_at)
    return FiringPlan(run=run, skipped=skipped, next_run=next_run)
