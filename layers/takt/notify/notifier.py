"""Incidents on a job, and the one notification each sends (docs/OPERATIONS.md).

A job's policy (`JobRecord.notify`, else its tenant's default in `Settings.notify_defaults`)
names a destination and the events it wants:

- `dead`: an execution ended `dead` or `failed`;
- `stopped`: `after_failures` executions in a row ended so (the job no longer does its work).

Each event opens at most one incident per job: a conditional write on the job
(`JobStore.open_incident`) lets exactly one of the writers that noted a failure send the
notification, so retries (which never reach a terminal state) and later failures while the
incident is open send nothing. The job's next succeeded execution closes its open incidents in the
write that notes it (`JobStore.record_outcome`), and each closed incident sends one `resolved`
notice.

A notification that cannot be delivered (the destination refused, the network) drops its
incident again, so the next failure opens and notifies it anew, and is logged as an error; it never
fails the execution or the worker's message.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from takt.config import Settings
from takt.models.calls import CallContext
from takt.models.ids import format_time
from takt.models.notify import NotifyPolicy
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.models.targets import EventBusSpec, HttpSpec, SnsSpec, parse_target
from takt.observability import logger
from takt.store.errors import NotFoundError
from takt.store.jobs import JobStore, OutcomeNote
from takt.targets.http import HttpTarget

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_sns import SNSClient

EVENT_SOURCE = "takt"
OPENED = "takt.incident.opened"
RESOLVED = "takt.incident.resolved"
# A webhook notification waits this long for its receiver.
WEBHOOK_TIMEOUT_SEC = 10.0


class DeliveryError(Exception):
    """A notification was not accepted by its destination."""


class Notifier:
    """Opens and closes a job's incidents as its executions end, and notifies each once."""

    def __init__(
        self,
        settings: Settings,
        jobs: JobStore,
        http: HttpTarget,
        sns: SNSClient,
        events: EventBridgeClient,
    ) -> None:
        self._settings = settings
        self._jobs = jobs
        self._http = http
        self._sns = sns
        self._events = events

    def policy(self, job: JobRecord) -> NotifyPolicy | None:
        """The job's own policy, else its tenant's default, else none."""
        return job.notify or self._settings.notify_defaults.get(job.tenant_id)

    def notify_state(
        self,
        record: ExecutionRecord,
        state: ExecState,
        note: OutcomeNote,
        now: datetime,
        error: str | None = None,
    ) -> None:
        """Act on an outcome `JobStore.record_outcome` noted: open or close incidents.
        `error` is the execution's final error, which an opened incident's notice carries."""
        if state == ExecState.SUCCEEDED:
            if note.incidents:
                self._resolve(record, note.incidents, now)
            return
        job = note.job
        policy = None if job is None else self.policy(job)
        if job is None or policy is None:
            return
        due = []
        if "dead" in policy.on and "dead" not in note.incidents:
            due.append("dead")
        if (
            "stopped" in policy.on
            and note.failure_streak >= policy.after_failures
            and "stopped" not in note.incidents
        ):
            due.append("stopped")
        for kind in due:
            incident = f"{record.execution_id}.{kind}"
            if not self._jobs.open_incident(job.tenant_id, job.job_id, kind, incident):
                continue
            notice = _notice(OPENED, kind, incident, job, record, state, note, now)
            notice["error"] = error
            if not self._deliver(policy, job, incident, notice, now):
                self._jobs.drop_incident(job.tenant_id, job.job_id, kind, incident)

    def _resolve(self, record: ExecutionRecord, closed: dict[str, str], now: datetime) -> None:
        try:
            job = self._jobs.get(record.tenant_id, record.job_id, consistent=False)
        except NotFoundError:
            # Deleted since its outcome was noted: nobody is left to tell.
            return
        policy = self.policy(job)
        if policy is None:
            return
        for kind, incident in sorted(closed.items()):
            note = OutcomeNote(job=job, failure_streak=0, incidents=closed)
            notice = _notice(RESOLVED, kind, incident, job, record, ExecState.SUCCEEDED, note, now)
            self._deliver(policy, job, f"{incident}.resolved", notice, now)

    def _deliver(
        self,
        policy: NotifyPolicy,
        job: JobRecord,
        notice_id: str,
        notice: dict[str, Any],
        now: datetime,
    ) -> bool:
        """Send one notice; False (logged) when the destination did not accept it."""
        spec = parse_target(policy.to)
        try:
            if isinstance(spec, SnsSpec):
                self._publish(spec, notice_id, notice)
            elif isinstance(spec, EventBusSpec):
                self._put_event(spec, notice)
            else:
                assert isinstance(spec, HttpSpec)  # NotifyPolicy admits no other kind
                self._post(spec, job, notice_id, notice, now)
        except (DeliveryError, ClientError, BotoCoreError) as exc:
            logger.error(
                "notification not delivered",
                job_id=job.job_id,
                notice=notice_id,
                to=policy.to,
                error=f"{type(exc).__name__}: {exc}",
            )
            return False
        logger.info("notification sent", job_id=job.job_id, notice=notice_id, type=notice["type"])
        return True

    def _publish(self, spec: SnsSpec, notice_id: str, notice: dict[str, Any]) -> None:
        kwargs: dict[str, Any] = {
            "TopicArn": spec.arn,
            "Subject": _subject(notice),
            "Message": json.dumps(notice, separators=(",", ":")),
            "MessageAttributes": {
                "takt-type": {"DataType": "String", "StringValue": notice["type"]},
                "takt-job-id": {"DataType": "String", "StringValue": notice["job_id"]},
            },
        }
        if spec.fifo:
            kwargs["MessageGroupId"] = notice["job_id"]
            kwargs["MessageDeduplicationId"] = notice_id
        self._sns.publish(**kwargs)

    def _put_event(self, spec: EventBusSpec, notice: dict[str, Any]) -> None:
        resp = self._events.put_events(
            Entries=[
                {
                    "EventBusName": spec.arn,
                    "Source": EVENT_SOURCE,
                    "DetailType": notice["type"],
                    "Detail": json.dumps(notice, separators=(",", ":")),
                }
            ]
        )
        if resp.get("FailedEntryCount", 0):
            entry = resp["Entries"][0]
            raise DeliveryError(f"{entry.get('ErrorCode')}: {entry.get('ErrorMessage', '')}")

    def _post(
        self,
        spec: HttpSpec,
        job: JobRecord,
        notice_id: str,
        notice: dict[str, Any],
        now: datetime,
    ) -> None:
        """POST through the HTTP target: the egress policy, the tenant's secrets and the
        Standard Webhooks signature apply as for any job's call; `webhook-id` is the notice's
        id, which a receiver dedupes on."""
        ctx = CallContext(
            job_id=job.job_id,
            execution_id=notice_id,
            attempt=1,
            scheduled_time=now,
            payload=notice,
            timeout_sec=WEBHOOK_TIMEOUT_SEC,
            deadline=time.monotonic() + WEBHOOK_TIMEOUT_SEC,
            tenant_id=job.tenant_id,
        )
        result = self._http.call(replace(spec, method="POST"), ctx)
        if result.outcome != "success":
            raise DeliveryError(result.error or f"HTTP {result.status_code}")


def _notice(
    kind_of_notice: str,
    kind: str,
    incident: str,
    job: JobRecord,
    record: ExecutionRecord,
    state: ExecState,
    note: OutcomeNote,
    now: datetime,
) -> dict[str, Any]:
    """The notification's document (the same on every destination)."""
    return {
        "type": kind_of_notice,
        "incident_id": incident,
        "kind": kind,
        "tenant_id": job.tenant_id,
        "job_id": job.job_id,
        "job_name": job.name,
        "execution_id": record.execution_id,
        "state": state.value,
        "error": None,
        "failure_streak": note.failure_streak,
        "at": format_time(now),
    }


def _subject(notice: dict[str, Any]) -> str:
    """An SNS subject (at most 100 characters, e-mail subscribers see it)."""
    verb = "resolved" if notice["type"] == RESOLVED else notice["kind"]
    name = notice["job_name"] or notice["job_id"]
    return f"takt: {name} {verb}"[:100]
