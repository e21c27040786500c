"""Identifiers: random job ids, and deterministic execution ids (DESIGN invariant 3).

An execution id is `<job id>.<scheduled instant>`, so two claimers that fire the same occurrence
compute the same id, and DynamoDB's `attribute_not_exists` lets only one of them create it.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

from takt.clock import format_time

# `format_time` is the clock's, named here too, beside `parse_time`, for the many callers that
# read and write instants with the ids.
__all__ = [
    "execution_id",
    "execution_key",
    "format_time",
    "from_ms",
    "new_job_id",
    "new_ulid",
    "occurrence_token",
    "parse_time",
    "split_execution_id",
    "task_execution_id",
    "to_ms",
]

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_ulid(now_ms: int | None = None) -> str:
    """A 26-character, lexicographically time-ordered id (ULID layout, lower-case Crockford)."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_job_id() -> str:
    return f"job_{new_ulid()}"


def occurrence_token(instant: datetime) -> str:
    """The sortable text form of an instant used in execution ids: 20261130T120000000Z."""
    utc = instant.astimezone(UTC)
    return utc.strftime("%Y%m%dT%H%M%S") + f"{utc.microsecond // 1000:03d}Z"


# A manual run's id ends in this after its instant: it sorts right after a scheduled run of the
# same instant, and reads as what it is (the single `m` once written reads as minutes, "…000Zm").
# Ids written with the `m` stay valid.
MANUAL_SUFFIX = "-manual"


def execution_id(job_id: str, scheduled: datetime, *, manual: bool = False) -> str:
    """The deterministic id of a job's occurrence; a manual trigger's says so after the instant."""
    return f"{job_id}.{occurrence_token(scheduled)}{MANUAL_SUFFIX if manual else ''}"


def split_execution_id(exec_id: str) -> tuple[str, str]:
    """(job id, sort key) of an execution id; ValueError when it is not one of ours."""
    job_id, sep, token = exec_id.rpartition(".")
    if not sep or not job_id.startswith("job_") or len(token) < 19:
        raise ValueError(f"not an execution id: {exec_id!r}")
    return job_id, token


def scheduled_of(exec_id: str) -> datetime:
    """The scheduled instant in an execution id's occurrence token (20261130T120000000Z[m]);
    ValueError when it is not one of ours."""
    # The first 19 characters: a manual run adds `m`, a workflow task `~<task>~<generation>`.
    token = split_execution_id(exec_id)[1][:19]
    # %f reads "000" as milliseconds: it pads a short fraction on the right.
    return datetime.strptime(token, "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)


def task_execution_id(run_id: str, task_id: str, generation: int) -> str:
    """The deterministic id of a workflow task's execution in one generation of its run.

    A run is its occurrence's execution (`<job id>.<token>`); its tasks' executions live in a
    partition of their own (`execution_key`), so a 1,000-task run does not flood the job's history.
    """
    return f"{run_id}~{task_id}~{generation}"


def execution_key(exec_id: str) -> tuple[str, str]:
    """(partition id, sort key) of an execution id: `job id` and its token for an occurrence,
    `run id` and `exec#<task>#<generation>` for a workflow task's execution."""
    job_id, token = split_execution_id(exec_id)
    run_token, sep, rest = token.partition("~")
    if not sep:
        return job_id, token
    task_id, sep, generation = rest.rpartition("~")
    if not sep or not task_id or not generation.isdigit():
        raise ValueError(f"not an execution id: {exec_id!r}")
    return f"{job_id}.{run_token}", f"exec#{task_id}#{generation}"


def parse_time(text: str) -> datetime:
    """An RFC 3339 instant as an aware UTC datetime."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"time without offset: {text!r}")
    return value.astimezone(UTC)


def to_ms(instant: datetime) -> int:
    return int(instant.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
