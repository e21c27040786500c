"""What goes on a lane: the message body and where it is sent.

Domain types, apart from the sender (`takt.dispatch.lanes`): fair dispatch decides on messages
and the claimer sends them, so both import these without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pydantic import AwareDatetime, BaseModel, ConfigDict

from takt.models.records import ExecutionRecord
from takt.models.targets import handler_name, target_host


class LaneMessage(BaseModel):
    """The body of a lane message: which execution, and which attempt it is meant for."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    tenant_id: str
    job_id: str
    execution_id: str
    attempt: int
    scheduled_time: AwareDatetime
    # The registered handler the execution runs, if any: a worker that does not serve it sends
    # the message back without touching the execution.
    handler: str | None = None
    # The host an HTTP target calls: a worker checks the host's rate limit before the lease.
    host: str | None = None
    # For a scheduled occurrence's first attempt: when its claim made the execution and the job
    # version it copied. A worker checks the job again before it runs an occurrence claimed
    # ahead of its time, so an edit acknowledged before the due time decides it
    # (takt.worker.recheck). Absent on every other message.
    claimed_at: AwareDatetime | None = None
    job_version: int | None = None
    # When a worker first sent this attempt back because it does not serve its handler: the
    # copies it sends carry it on, so the attempt fails once no worker has served the handler
    # for `unserved_limit_sec` instead of circling for ever. Absent until then.
    unserved_since: AwareDatetime | None = None
    # False when the claim did not write the execution (`record_at_lease`): the worker that
    # leases it writes it, from the job as it then is, in the lease's own write.
    recorded: bool = True


@dataclass(frozen=True)
class Outgoing:
    lane: str
    message: LaneMessage
    delay_sec: int = 0
    # The region epoch the claim that sends it acted with (a message attribute, for the
    # record); None with one region, where the message carries no attribute.
    region_epoch: int | None = None

    @classmethod
    def of(
        cls,
        record: ExecutionRecord,
        attempt: int | None = None,
        delay_sec: int = 0,
        *,
        recorded: bool = True,
    ) -> Outgoing:
        """The message that sends `record` (at `attempt`, default its current one) to its lane;
        `recorded` False for a claimed occurrence the claim left to its worker to write."""
        attempt = record.attempt if attempt is None else attempt
        # A workflow's tasks, manual runs, backfills and retries were not claimed ahead.
        claimed = record.trigger == "schedule" and record.run_id is None and attempt == 1
        return cls(
            lane=record.lane,
            message=LaneMessage(
                tenant_id=record.tenant_id,
                job_id=record.job_id,
                execution_id=record.execution_id,
                attempt=attempt,
                scheduled_time=record.scheduled_time,
                handler=handler_name(record.target),
                host=target_host(record.target),
                claimed_at=record.created_at if claimed else None,
                job_version=record.job_version if claimed else None,
                recorded=recorded,
            ),
            delay_sec=delay_sec,
        )


class Lanes(Protocol):
    """What sends messages to their lanes (`takt.dispatch.lanes.LaneSender`, over SQS): the
    execution lifecycle and the workflow engine take this, so neither imports the dispatcher
    that calls them."""

    def send(self, outgoing: list[Outgoing]) -> int: ...
