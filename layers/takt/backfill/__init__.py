"""Backfills: run every occurrence of a job in a past (or any) range, a few at a time.

Each occurrence runs as the execution the scheduler would have made for it (the same
deterministic id), marked `trigger: backfill`, so an occurrence that already has an execution
(it ran, or an earlier backfill ran it) is not run again, and repeating a backfill repeats
nothing. A backfill is a record in the tenants table that a pump advances: the API starts it,
and each of its executions' ends starts the next ones (`Lifecycle.ended` in
`takt.executions.lifecycle`), at most `max_parallel` open at once. Cancelling it stops its open
executions and starts no more.
"""

from takt.backfill.engine import MAX_OCCURRENCES, MAX_PARALLEL, Backfiller, BackfillError

__all__ = [
    "MAX_OCCURRENCES",
    "MAX_PARALLEL",
    "BackfillError",
    "Backfiller",
]
