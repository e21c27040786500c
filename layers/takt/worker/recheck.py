"""The lease-time check of an occurrence claimed ahead of its time (DESIGN invariant 8).

A claim runs ahead of the due time (`dispatch_ahead_sec`; the :00 burst up to
`burst_ahead_sec`), and the execution it makes carries a snapshot of the job as it was then.
An edit the API acknowledges after the claim and before the due time must still decide the
occurrence: a paused, deleted or rescheduled job does not run it. The worker holds such a
message until its time, and then, before the lease, reads the job once (a consistent read) and
judges the occurrence against the job as it now is:

- the job is gone: skipped (deleted);
- same version: nothing was edited since the claim, it runs as claimed;
- paused: skipped;
- edited, and the job as it now is still fires at this instant (a new payload or target, a new
  schedule that keeps the instant, a pause and resume): it runs as the job now is, the lease
  taking the new snapshot;
- edited, and the job no longer fires at this instant (moved, rescheduled): skipped.

The check is only made for occurrences claimed ahead (`claimed_ahead`): a claim made at or after
the due time read the job after every edit acknowledged before it. The read happens once the
worker's clock has reached the due time, so an edit acknowledged before then is in it; clocks that
disagree by up to `clock_margin_sec` are covered by treating a claim made that much after the due
time as ahead too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from takt.models.ids import format_time
from takt.models.lanes import LaneMessage
from takt.models.records import JobRecord, JobStatus
from takt.occurrences import fires_at


@dataclass(frozen=True)
class Verdict:
    """What to do with the occurrence: run it (`job`: as this job now is, when it was edited)
    or skip it (`skip_reason`)."""

    skip_reason: str | None = None
    job: JobRecord | None = None


def claimed_ahead(message: LaneMessage, clock_margin_sec: float) -> bool:
    """Whether the message's occurrence was claimed before its due time (within the margin)."""
    if message.claimed_at is None or message.job_version is None:
        return False
    return message.claimed_at < message.scheduled_time + timedelta(seconds=clock_margin_sec)


def judge(job: JobRecord | None, message: LaneMessage) -> Verdict:
    """The verdict on `message`'s occurrence given the job as it now is (None: deleted)."""
    due = format_time(message.scheduled_time)
    if job is None:
        return Verdict(skip_reason=f"the job was deleted before its occurrence of {due} ran")
    if job.status == JobStatus.PAUSED:
        return Verdict(skip_reason=f"the job was paused before its occurrence of {due} ran")
    if job.version == message.job_version:
        return Verdict()
    edited = f"the job was edited (version {message.job_version} to {job.version})"
    if not fires_at(job, message.scheduled_time):
        return Verdict(skip_reason=f"{edited} and no longer fires at {due}")
    return Verdict(job=job)
