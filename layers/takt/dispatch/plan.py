"""What to do with a job's due occurrence: pure decisions about catch-up and overlap.

A claimer that finds occurrence `due` of a job at `now` may discover that later occurrences have
also passed (the scheduler was down, or the job was paused and resumed). The job's `catchup`
policy decides which of them run and which are recorded as `skipped`:

- `all`: every missed occurrence within `catchup_window` runs; older ones are skipped.
- `once` (default): only the latest runs; the others are skipped.
- `skip`: the latest runs only if it is less than `misfire_grace` late; the rest are skipped.
A one-off job always runs, however late.

One firing records at most the first and the last `MAX_OCCURRENCES_PER_FIRING` missed
occurrences (as runs or skips); after a longer outage, those in between are passed over
unrecorded, so a firing stays bounded in writes whatever the outage.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from takt.models.records import JobRecord
from takt.schedule import Schedule, next_after, occurrences, parse_duration

MAX_OCCURRENCES_PER_FIRING = 1000
# How far one firing walks past the first MAX_OCCURRENCES_PER_FIRING missed occurrences to find
# the latest ones (a hundred chunks: 69 days of an every-minute job).
MAX_CATCHUP_CHUNKS = 100
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
    first, last = _missed(job, schedule, due, now)
    recent = last or first
    latest = recent[-1]
    if job.catchup == "all":
        horizon = now - parse_duration(job.catchup_window)
        run = [t for t in recent if t >= horizon] or [latest]
    elif job.catchup == "once" or now - latest <= MISFIRE_GRACE:
        run = [latest]
    else:
        run = []
    running = set(run)
    skipped = [(t, f"catchup={job.catchup}") for t in [*first, *last] if t not in running]
    after = max(now, latest)
    next_run = next_after(schedule, after, start_at=job.first_allowed, end_at=job.end_at)
    return FiringPlan(run=run, skipped=skipped, next_run=next_run)


def _missed(
    job: JobRecord, schedule: Schedule, due: datetime, now: datetime
) -> tuple[list[datetime], list[datetime]]:
    """The occurrences from `due` through `now`, oldest first, as (first, last): the first
    `MAX_OCCURRENCES_PER_FIRING` of them, and when there are more, the last ones, found by
    walking on in bounded chunks. Without the walk, an outage longer than the bound would run an
    occurrence from hours ago as "the latest" (and miss the catch-up window altogether)."""
    limit = MAX_OCCURRENCES_PER_FIRING
    window = {"start_at": job.first_allowed, "end_at": job.end_at}
    first = [due, *occurrences(schedule, due, now, limit=limit - 1, **window)]
    if len(first) < limit:
        return first, []
    last: deque[datetime] = deque(maxlen=limit)
    after = first[-1]
    for _ in range(MAX_CATCHUP_CHUNKS):
        chunk = occurrences(schedule, after, now, limit=limit, **window)
        last.extend(chunk)
        if len(chunk) < limit:
            break
        after = chunk[-1]
    return first, list(last)
