"""What becomes of a job's due occurrences: catch-up, calendars and overlap, decided in one place.

The claimer (`takt.dispatch.claimer`) and the lifecycle (`takt.executions.lifecycle`) hold no rule
of their own about an occurrence: they read what the decision needs (the job, whether its overlap
slot is busy, its calendars), ask this module, and write what it decided. Nothing here reads a
clock, a table or a queue, so every rule is a pure function that a table test can pin down
(tests/unit/test_occurrences.py), and the lifecycle can use it without importing the dispatcher.

A claimer that finds occurrence `due` of a job at `now` may discover that later occurrences have
also passed (the scheduler was down, or the job was paused and resumed). The job's `catchup`
policy decides which of them are run and which are recorded as `skipped` (`plan_firing`):

- `all`: every missed occurrence within `catchup_window` runs; older ones are skipped.
- `once` (default): only the latest runs; the others are skipped.
- `skip`: the latest runs only if it is at most `MISFIRE_GRACE` late; the rest are skipped.
A one-off job always runs, however late.

One firing records at most the first and the last `MAX_OCCURRENCES_PER_FIRING` missed
occurrences (as runs or skips); after a longer outage, those in between are passed over
unrecorded, so a firing stays bounded in writes whatever the outage.

Then (`decide`) the occurrences the catch-up runs that fall inside one of the job's calendars'
windows are skipped, and the job's `overlap` rule (`OVERLAP_RULES`, one object per policy) orders
the rest against the job's open execution, its *slot*:

- `allow`: every one runs; the job has no slot.
- `skip`: with the slot busy, each is skipped; with it free, the first runs and takes the slot,
  so the occurrences after it in the same firing are skipped as overlapping it. Combined with
  `catchup: all` this means the oldest missed occurrence in the window runs and the others are
  recorded as skipped (`overlap=skip`), not all of them.
- `queue`: each runs in turn: the first starts unless the slot is busy, the others wait `queued`
  and the lifecycle starts the oldest one when the slot frees (`promotes_queued`).
- `replace`: only the newest runs, and it stops the open execution holding the slot; the older
  ones are skipped (`overlap=replace`).

A new overlap policy is one more `OverlapRule` in `OVERLAP_RULES` and one more name in
`takt.models.records.OverlapPolicy`; nothing in the claimer or the lifecycle names a policy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from takt.models.calendars import Calendar, blackout
from takt.models.ids import format_time
from takt.models.records import ExecState, JobRecord, JobStatus, OverlapPolicy
from takt.schedule import Schedule, ScheduleError, next_after, occurrences, parse_duration

MAX_OCCURRENCES_PER_FIRING = 1000
# How far one firing walks past the first MAX_OCCURRENCES_PER_FIRING missed occurrences to find
# the latest ones (a hundred chunks: 69 days of an every-minute job).
MAX_CATCHUP_CHUNKS = 100
MISFIRE_GRACE = timedelta(seconds=60)
# The longest catch-up window the API accepts: a window is how far back a firing looks, and no
# firing of an interval job looks further back than its walk reaches (`window_problem`).
MAX_CATCHUP_WINDOW = timedelta(days=366)
# The earliest instant a horizon can name: a window reaching past it is clamped here.
_EARLIEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class FiringPlan:
    """What the catch-up policy makes of one firing: the occurrences that run (oldest first), the
    ones recorded as skipped with their reason, and where the job goes next."""

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
        horizon = catchup_horizon(job, now)
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


def catchup_horizon(job: JobRecord, now: datetime) -> datetime:
    """The oldest instant the job's catch-up window reaches from `now`. A window reaching before
    the first instant a datetime can hold is clamped there: a stored window of any length then
    reaches back as far as time goes, where subtracting it would raise OverflowError (and park
    the job in quarantine at every claim)."""
    window = parse_duration(job.catchup_window)
    reach = now - _EARLIEST
    return _EARLIEST if window >= reach else now - window


def window_problem(job: JobRecord) -> str | None:
    """Why the job's catch-up window cannot be planned, or None when it can.

    A window is how far back a firing runs missed occurrences (`catchup: all`) and how old a
    `run_at` may be. It may be at most `MAX_CATCHUP_WINDOW`; and with `catchup: all`, an interval
    job's window may hold no more occurrences than one firing walks through
    (`MAX_OCCURRENCES_PER_FIRING` times `MAX_CATCHUP_CHUNKS`): beyond that walk the planner never
    sees the window's far end, so the promise of running all of it could not be kept.
    """
    window = parse_duration(job.catchup_window)
    if window > MAX_CATCHUP_WINDOW:
        return f"catchup_window {job.catchup_window} is longer than {MAX_CATCHUP_WINDOW.days}d"
    walked = MAX_OCCURRENCES_PER_FIRING * MAX_CATCHUP_CHUNKS
    if job.catchup == "all" and job.interval is not None:
        every = parse_duration(job.interval)
        if window > every * walked:
            return (
                f"catchup_window {job.catchup_window} holds more than {walked} occurrences of "
                f"interval {job.interval}, more than one firing can catch up (catchup: all)"
            )
    return None


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


@dataclass(frozen=True)
class Occurrence:
    """One occurrence as decided: the state its execution is created in (pending, queued or
    skipped) and, for a skipped one, why."""

    scheduled: datetime
    state: ExecState
    reason: str | None = None


def _pending(scheduled: datetime) -> Occurrence:
    return Occurrence(scheduled, ExecState.PENDING)


@dataclass(frozen=True)
class Replacement:
    """The open execution holding the job's slot is to be stopped, for `reason`, before the
    occurrence `scheduled` starts."""

    scheduled: datetime
    reason: str


@dataclass(frozen=True)
class Arranged:
    """What an overlap rule made of the occurrences that run: the ones it skips before anything
    starts, the holder it replaces, and the rest in order (some may be skipped as they come)."""

    runs: list[Occurrence]
    skipped: list[Occurrence] = field(default_factory=list)
    replaces: Replacement | None = None


class OverlapRule:
    """One overlap policy: how a firing's occurrences meet the job's open execution.

    `holds_slot`: the job's runs hold its slot (`JobRecord.active_execution`) while open, so the
    claim reads whether it is busy, notes the run that takes it, claims no occurrence ahead for
    the burst (its decision depends on the slot at the claim's instant), and the lifecycle frees
    it when the run ends. `promotes_queued`: the lifecycle then starts the oldest queued run.
    """

    name: ClassVar[OverlapPolicy]
    holds_slot: ClassVar[bool] = True
    promotes_queued: ClassVar[bool] = False

    def arrange(self, run: Sequence[datetime], busy: bool) -> Arranged:
        """The occurrences of `run` (oldest first, never empty) against a slot that is `busy`
        or free."""
        raise NotImplementedError


class _Allow(OverlapRule):
    name = "allow"
    holds_slot = False

    def arrange(self, run: Sequence[datetime], busy: bool) -> Arranged:
        return Arranged(runs=[_pending(t) for t in run])


class _Skip(OverlapRule):
    name = "skip"

    def arrange(self, run: Sequence[datetime], busy: bool) -> Arranged:
        runs = []
        for scheduled in run:
            if busy:
                runs.append(Occurrence(scheduled, ExecState.SKIPPED, "overlap=skip"))
                continue
            runs.append(_pending(scheduled))
            # The run just started holds the slot for the occurrences after it.
            busy = True
        return Arranged(runs=runs)


class _Queue(OverlapRule):
    name = "queue"
    promotes_queued = True

    def arrange(self, run: Sequence[datetime], busy: bool) -> Arranged:
        return Arranged(
            runs=[
                Occurrence(t, ExecState.QUEUED if busy or index > 0 else ExecState.PENDING)
                for index, t in enumerate(run)
            ]
        )


class _Replace(OverlapRule):
    name = "replace"

    def arrange(self, run: Sequence[datetime], busy: bool) -> Arranged:
        # Only the newest occurrence runs: each would replace the one before it at once.
        *older, newest = run
        reason = f"replaced by the occurrence of {format_time(newest)} (overlap=replace)"
        return Arranged(
            runs=[_pending(newest)],
            skipped=[Occurrence(t, ExecState.SKIPPED, "overlap=replace") for t in older],
            replaces=Replacement(newest, reason) if busy else None,
        )


OVERLAP_RULES: Mapping[OverlapPolicy, OverlapRule] = {
    rule.name: rule for rule in (_Allow(), _Skip(), _Queue(), _Replace())
}


def overlap_rule(policy: OverlapPolicy) -> OverlapRule:
    """The rule of an overlap policy, as a job or an execution names it."""
    return OVERLAP_RULES[policy]


def claimable_ahead(job: JobRecord) -> bool:
    """Whether a job's occurrence may be claimed ahead for the burst (beyond
    `dispatch_ahead_sec`): only when nothing of its run is decided by the claim's instant. An
    overlap rule with a slot judges the previous run as it is at the claim, and a workflow's run
    starts at its claim; those are claimed within `dispatch_ahead_sec` as ever."""
    return not overlap_rule(job.overlap).holds_slot and job.tasks is None


@dataclass(frozen=True)
class Decision:
    """What a firing creates, in this order: the skipped occurrences (catch-up, calendars, the
    overlap rule's), the holder's replacement, then the runs (which may skip as they come)."""

    skipped: list[Occurrence]
    runs: list[Occurrence]
    replaces: Replacement | None = None


def decide(job: JobRecord, plan: FiringPlan, busy: bool, calendars: Sequence[Calendar]) -> Decision:
    """The firing's occurrences decided: `plan` is the catch-up's (`plan_firing`), `busy` whether
    the job's slot is held by an open execution, `calendars` the job's calendars that exist (a
    calendar deleted since the job named it blacks out nothing)."""
    skipped = [Occurrence(t, ExecState.SKIPPED, reason) for t, reason in plan.skipped]
    run = []
    for scheduled in plan.run:
        inside = _blackout(calendars, scheduled)
        if inside is None:
            run.append(scheduled)
        else:
            skipped.append(Occurrence(scheduled, ExecState.SKIPPED, inside))
    if not run:
        return Decision(skipped=skipped, runs=[])
    arranged = overlap_rule(job.overlap).arrange(run, busy)
    return Decision([*skipped, *arranged.skipped], arranged.runs, arranged.replaces)


def _blackout(calendars: Sequence[Calendar], scheduled: datetime) -> str | None:
    """Why `scheduled` is skipped by the first calendar whose window holds it (judged by its
    nominal instant, not its jittered firing), naming the calendar; None when none does."""
    for calendar in calendars:
        why = blackout(calendar, scheduled)
        if why is not None:
            return f"calendar {calendar.name}: {why}"
    return None


_JUST_BEFORE = timedelta(microseconds=1)


def fires_at(job: JobRecord, instant: datetime) -> bool:
    """Whether the job, as it now is, has an occurrence at `instant`."""
    if not job.recurring:
        # A one-off the claim completed is still due at its own instant.
        return job.run_at == instant and job.status in (JobStatus.ACTIVE, JobStatus.COMPLETED)
    if job.status != JobStatus.ACTIVE:
        return False
    try:
        found = next_after(
            job.parsed_schedule(),
            instant - _JUST_BEFORE,
            start_at=job.first_allowed,
            end_at=job.end_at,
        )
    except (ScheduleError, ValueError, OverflowError):
        return False
    return found == instant
