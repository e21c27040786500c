"""The job service: what each API call does to the tables, in crash-safe order.

The API writes jobs only, never the due index: the jobs table's stream carries every change to
the due indexer (`takt.dispatch.indexer`), which puts the due item of an active job's new
`next_run_time`. A job write that succeeded is in the stream, which Lambda reads until the
indexer has taken it, so a crash of the API after its write loses no index entry.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Any

from takt.api.errors import (
    ConflictingStateError,
    GoneError,
    IdempotencyMismatchError,
    InvalidRequestError,
    JobNotFoundError,
    PayloadTooLargeError,
    PreconditionFailedError,
    TooManyRequestsError,
)
from takt.api.models import JobCreate, JobPatch
from takt.executions.lifecycle import Lifecycle
from takt.models.ids import execution_id, new_job_id, to_ms
from takt.models.lanes import Outgoing
from takt.models.records import WORKFLOW_TARGET, ExecState, ExecutionRecord, JobRecord, JobStatus
from takt.models.targets import HttpSpec, parse_target
from takt.schedule import ScheduleError, next_after, parse_cron, parse_duration, preview
from takt.store.errors import ConflictError, NotFoundError
from takt.store.executions import Transition, open_shard_of
from takt.store.idempotency import IdempotencyRecord
from takt.store.names import JobNames, NameTakenError
from takt.targets.egress import EgressPolicy
from takt.targets.http import definition_problems
from takt.tenants import JobLimitError, RateLimitedError
from takt.tenants.limits import retry_after
from takt.wiring import Services

# How many pages of the attention index one bulk re-run reads at most (200 executions each).
BULK_RERUN_PAGES = 10

SCHEDULE_FIELDS = {
    "schedule",
    "interval",
    "run_at",
    "time_zone",
    "dst",
    "start_at",
    "end_at",
    "pause_until",
    "jitter",
}


def _too_many_jobs(exc: JobLimitError) -> TooManyRequestsError:
    return TooManyRequestsError(
        f"{exc}: delete jobs to create more",
        [{"field": "max_jobs", "message": f"the tenant's limit is {exc.limit} jobs"}],
    )


def body_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


class JobService:
    def __init__(self, svc: Services) -> None:
        self._svc = svc

    # Jobs

    def create(
        self, tenant_id: str, body: JobCreate, idempotency_key: str | None
    ) -> tuple[JobRecord, bool]:
        """Create a job; (job, False) when the idempotency key returns an earlier one.

        Everything that can refuse the request runs before the first write, so a refused
        request leaves no idempotency record behind (DESIGN invariant 7): otherwise the
        corrected retry under the same key would be refused as a different body.
        """
        now = self._svc.clock.now()
        key = idempotency_key or body.idempotency_key
        job = JobRecord(
            tenant_id=tenant_id,
            job_id=new_job_id(),
            name=body.name,
            schedule=body.schedule,
            interval=body.interval,
            run_at=body.run_at,
            time_zone=body.time_zone,
            dst=body.dst,
            start_at=body.start_at,
            end_at=body.end_at,
            anchor=body.start_at or now,
            target=body.target or WORKFLOW_TARGET,
            tasks=body.tasks,
            payload=body.payload,
            retry=body.retry,
            timeout_sec=body.timeout_sec,
            priority=body.priority,
            catchup=body.catchup,
            catchup_window=body.catchup_window,
            overlap=body.overlap,
            jitter=body.jitter,
            status=JobStatus(body.status),
            pause_until=body.pause_until,
            calendars=body.calendars,
            notify=body.notify,
            idempotency_key=key,
            created_at=now,
            updated_at=now,
        )
        if not body.run_late:
            self._check_not_late(job, now)
        job.next_run_time = self._first_run(job, now)
        self._check_calendars(tenant_id, job.calendars)
        self._check_payload(job)
        self._check_target_region(job)
        self._check_http_target(job)
        if key:
            digest = body_hash(
                body.model_dump(mode="json", exclude={"idempotency_key", "run_late"})
            )
            return self._create_keyed(job, key, digest, now)
        self._within_limits(tenant_id, now)
        self._store(job, None)
        return job, True

    def _names(self) -> JobNames:
        return JobNames(self._svc.clients.dynamodb, self._svc.settings.tenants_table)

    def _claim_name(self, job: JobRecord, now: datetime) -> None:
        """Claim the job's name for it (409 when another job of the tenant has it)."""
        if job.name is None:
            return

        def holds(holder: str) -> bool:
            try:
                return self._svc.jobs.get(job.tenant_id, holder).name == job.name
            except NotFoundError:
                return False

        try:
            self._names().claim(job.tenant_id, job.name, job.job_id, to_ms(now), holds)
        except NameTakenError as exc:
            raise ConflictingStateError(
                f"{exc}: names are unique among a tenant's jobs",
                [{"field": "name", "message": f"taken by job {exc.holder}"}],
            ) from None

    def _create_keyed(
        self, job: JobRecord, key: str, digest: str, now: datetime
    ) -> tuple[JobRecord, bool]:
        """Create `job` under idempotency key `key`, or answer with the job an earlier try under
        that key made.

        The key is looked up before the tenant's limits are taken, so a retry of a create that
        succeeded gets its job back even at a limit, and takes no job slot and no rate token.
        A try racing another one of the same key is answered with that one's job too: if the
        other stored it before this one's limit check refused, and if the other claimed the key
        first. The slot is only ever taken by the transaction that writes the job, but in that
        second race the rate token this try took stays spent: TokenBuckets gives none back.
        """
        tenant_id = job.tenant_id
        now_epoch = int(now.timestamp())
        earlier = self._svc.idempotency.find(tenant_id, key, now_epoch)
        if earlier is not None:
            replayed = self._replay(tenant_id, key, digest, earlier)
            if replayed is not None:
                return replayed, False
            job.job_id = earlier.job_id  # an earlier try crashed: finish its work
        try:
            self._within_limits(tenant_id, now)
        except TooManyRequestsError:
            replayed = self._replay_stored(tenant_id, key, digest, now_epoch)
            if replayed is None:
                raise
            return replayed, False
        if earlier is None:
            earlier = self._svc.idempotency.claim(tenant_id, key, job.job_id, digest, now_epoch)
            if earlier is not None:
                replayed = self._replay(tenant_id, key, digest, earlier)
                if replayed is not None:
                    return replayed, False
                job.job_id = earlier.job_id
        try:
            self._store(job, key)
        except ConflictError:
            # Another try finishing the same earlier one wrote the job first.
            return self._svc.jobs.get(tenant_id, job.job_id), False
        return job, True

    def _store(self, job: JobRecord, key: str | None) -> None:
        """Write and count the job, and mark `key` done with it; 429 at the job limit, giving
        back `key`, claimed for it, so the refused create leaves nothing behind.

        Any other failure gives the key back too when the job is not stored, so a create that
        failed (500) does not hold its key for a different, corrected body. When the failure
        hides a write that happened (a lost answer), the key stays, and a retry finds the job.
        """
        idempotency = self._svc.idempotency
        done = idempotency.done_item(job.tenant_id, key, job.job_id) if key else None
        self._claim_name(job, job.created_at)
        try:
            self._svc.limiter.create_job(job, done)
        except JobLimitError as exc:
            if key:
                idempotency.release(job.tenant_id, key, job.job_id)
            self._release_name(job.tenant_id, job.name, job.job_id)
            raise _too_many_jobs(exc) from None
        except ConflictError:
            raise
        except Exception:
            if not self._stored(job):
                if key:
                    idempotency.release(job.tenant_id, key, job.job_id)
                self._release_name(job.tenant_id, job.name, job.job_id)
            raise

    def _stored(self, job: JobRecord) -> bool:
        try:
            self._svc.jobs.get(job.tenant_id, job.job_id)
        except NotFoundError:
            return False
        return True

    def _check_not_late(self, job: JobRecord, now: datetime) -> None:
        """Refuse a `run_at` older than the job's catch-up window: it would run at once, which
        a date years in the past almost never means (`run_late` asks for it explicitly)."""
        if job.run_at is None:
            return
        window = parse_duration(job.catchup_window)
        if job.run_at < now - window:
            message = (
                f"run_at is more than the catch-up window ({job.catchup_window}) in the past; "
                "send run_late: true to run it now anyway"
            )
            raise InvalidRequestError(message, [{"field": "run_at", "message": message}])

    def _release_name(self, tenant_id: str, name: str | None, job_id: str) -> None:
        if name is not None:
            self._names().release(tenant_id, name, job_id)

    def _replay(
        self, tenant_id: str, key: str, digest: str, earlier: IdempotencyRecord
    ) -> JobRecord | None:
        """The job an earlier create under `key` made; 422 when that create had another body.

        None when no such job is stored yet (the earlier try crashed before writing it, or is
        still writing it): this create then writes it under that id. 410 when the job was
        stored and has been deleted since: the key does not bring it back.
        """
        if earlier.body_hash != digest:
            raise IdempotencyMismatchError(
                f"idempotency key {key!r} was used with a different body",
                [{"field": "idempotency_key", "message": "used with a different body"}],
            )
        try:
            return self._svc.jobs.get(tenant_id, earlier.job_id)
        except NotFoundError:
            if earlier.done:
                raise GoneError(
                    f"job {earlier.job_id}, created with idempotency key {key!r}, was deleted",
                    [
                        {
                            "field": "idempotency_key",
                            "message": f"its job {earlier.job_id} was deleted",
                        }
                    ],
                ) from None
            return None

    def _replay_stored(
        self, tenant_id: str, key: str, digest: str, now_epoch: int
    ) -> JobRecord | None:
        """The job stored under `key` by now, if any (`_replay`)."""
        earlier = self._svc.idempotency.find(tenant_id, key, now_epoch)
        return None if earlier is None else self._replay(tenant_id, key, digest, earlier)

    def _within_limits(self, tenant_id: str, now: datetime) -> None:
        """Refuse a create over the tenant's job limit or creation rate (429), after every
        check of the request itself and the idempotency key's lookup, so neither a bad request
        nor a retry of a create that succeeded spends a token."""
        limiter = self._svc.limiter
        try:
            limiter.check_room(tenant_id)
            limiter.take_create_token(tenant_id, now)
        except JobLimitError as exc:
            raise _too_many_jobs(exc) from None
        except RateLimitedError as exc:
            raise TooManyRequestsError(
                f"{exc}; try again in {exc.retry_after_sec:.1f} s",
                [{"field": "create_per_sec", "message": f"over {exc.rate:g} jobs a second"}],
                retry_after_sec=retry_after(exc.retry_after_sec),
            ) from None

    def _first_run(self, job: JobRecord, now: datetime) -> datetime:
        """The first occurrence from now on; a one-off in the past runs at once (or when its
        pause ends)."""
        if job.run_at is not None:
            return max(job.run_at, job.pause_until or job.run_at)
        try:
            first = next_after(
                job.parsed_schedule(), now, start_at=job.first_allowed, end_at=job.end_at
            )
        except ScheduleError as exc:
            raise InvalidRequestError(
                str(exc), [{"field": exc.field, "message": str(exc)}]
            ) from exc
        except OverflowError:
            first = None
        if first is None and job.end_at is None:
            field = "start_at" if job.start_at else "schedule"
            message = "the schedule never fires before the end of the year 9999"
            raise InvalidRequestError(message, [{"field": field, "message": message}])
        if first is None:
            raise InvalidRequestError(
                "the schedule never fires between start_at and end_at",
                [{"field": "end_at", "message": "no occurrence before end_at"}],
            )
        return first

    def _check_payload(self, job: JobRecord) -> None:
        size = len(json.dumps(job.payload, separators=(",", ":")).encode())
        limit = self._svc.settings.limits_for(job.tenant_id).max_payload_bytes
        if size > limit:
            raise PayloadTooLargeError(
                f"payload is {size} bytes; the limit is {limit}",
                [{"field": "payload", "message": f"{size} bytes; the limit is {limit}"}],
            )

    def get(self, tenant_id: str, job_id: str) -> JobRecord:
        try:
            return self._svc.jobs.get(tenant_id, job_id)
        except NotFoundError:
            raise JobNotFoundError(f"job {job_id} not found") from None

    def list_jobs(
        self,
        tenant_id: str,
        limit: int,
        cursor: str | None,
        status: str | None,
        name_prefix: str | None,
    ) -> tuple[list[JobRecord], str | None]:
        try:
            return self._svc.jobs.list(
                tenant_id, limit=limit, cursor=cursor, status=status, name_prefix=name_prefix
            )
        except ValueError as exc:
            raise InvalidRequestError(str(exc), [{"field": "cursor", "message": str(exc)}]) from exc

    def update(
        self, tenant_id: str, job_id: str, patch: JobPatch, if_match: int | None
    ) -> JobRecord:
        current = self.get(tenant_id, job_id)
        if if_match is not None and if_match != current.version:
            raise PreconditionFailedError(
                f"job {job_id} is at version {current.version}, not {if_match}"
            )
        given = set(patch.model_fields_set) - {"run_late"}
        changes: dict[str, Any] = {f: getattr(patch, f) for f in given if f != "status"}
        if patch.tasks is not None:  # a job runs one target or a workflow, never both
            changes["target"] = WORKFLOW_TARGET
        elif patch.target is not None:
            changes["tasks"] = None
        if changes.keys() & {"schedule", "interval", "run_at"}:
            for kind in ("schedule", "interval", "run_at"):
                changes.setdefault(kind, None)
        now = self._svc.clock.now()
        updated = current.model_copy(update=changes)
        if patch.target is not None or patch.tasks is not None or patch.notify is not None:
            self._check_target_region(updated)
            self._check_http_target(updated)
        if "status" in given and patch.status is not None:
            updated.status = JobStatus(patch.status)
        elif current.status == JobStatus.COMPLETED and given & {"schedule", "interval", "run_at"}:
            # A finished job given a new schedule runs again.
            updated.status = JobStatus.ACTIVE
        if updated.schedule is not None:
            self._validate_cron(updated)
        if "calendars" in given:
            self._check_calendars(tenant_id, updated.calendars)
        if (
            current.status == JobStatus.COMPLETED
            and updated.status == JobStatus.ACTIVE
            and not given & {"schedule", "interval", "run_at"}
        ):
            raise ConflictingStateError(
                f"job {job_id} has completed; give it a new schedule or run_at to run it again"
            )
        reschedule = bool(given & SCHEDULE_FIELDS) or (
            current.status != JobStatus.ACTIVE and updated.status == JobStatus.ACTIVE
        )
        written = (
            (given - {"status"})
            | {"updated_at", "version"}
            | (changes.keys() & {"target", "tasks"})
        )
        if "status" in given:
            written.add("status")
        if "run_at" in given and not patch.run_late:
            self._check_not_late(updated, now)
        if reschedule and updated.status == JobStatus.ACTIVE:
            if "interval" in given or "start_at" in given:
                updated.anchor = updated.start_at or now
                written.add("anchor")
            updated.next_run_time = self._first_run(updated, now)
            # The status too, although it was read as active: the scheduler may have completed
            # a one-off since (a claim runs ahead of the due time), and a job moved to a new
            # time must not stay completed there, never to run (DESIGN invariant 8).
            written |= {"next_run_time", "status"}
        self._check_payload(updated)
        updated.version = current.version + 1
        updated.updated_at = now
        if given & {"schedule", "interval", "run_at"}:
            written |= {"schedule", "interval", "run_at"}
        self._write_update(current, updated, written, now)
        return self.get(tenant_id, job_id)

    def _write_update(
        self, current: JobRecord, updated: JobRecord, written: set[str], now: datetime
    ) -> None:
        """Write an update; a new name is claimed first and the old one given back after."""
        tenant_id, job_id = current.tenant_id, current.job_id
        renamed = updated.name != current.name
        if renamed:
            self._claim_name(updated, now)
        try:
            self._svc.jobs.update_definition(updated, current.version, written)
        except (ConflictError, NotFoundError) as exc:
            if renamed:
                self._release_name(tenant_id, updated.name, job_id)
            if isinstance(exc, NotFoundError):
                raise JobNotFoundError(f"job {job_id} not found") from None
            raise PreconditionFailedError(
                f"job {job_id} changed meanwhile; read it again"
            ) from None
        if renamed:
            self._release_name(tenant_id, current.name, job_id)

    def _check_calendars(self, tenant_id: str, names: list[str] | None) -> None:
        """Refuse (400, naming `calendars`) a job that names a calendar the tenant lacks."""
        for name in names or []:
            try:
                self._svc.calendars.get(tenant_id, name)
            except NotFoundError:
                message = f"no calendar named {name!r}: create it with POST /v1/calendars"
                raise InvalidRequestError(
                    message, [{"field": "calendars", "message": message}]
                ) from None

    def _validate_cron(self, job: JobRecord) -> None:
        try:
            parse_cron(job.schedule or "", job.time_zone)
        except ScheduleError as exc:
            raise InvalidRequestError(
                str(exc), [{"field": exc.field, "message": str(exc)}]
            ) from exc

    def delete(self, tenant_id: str, job_id: str) -> None:
        name = self.get(tenant_id, job_id).name
        try:
            self._svc.limiter.delete_job(tenant_id, job_id)
        except NotFoundError:
            raise JobNotFoundError(f"job {job_id} not found") from None
        # After the job is gone: a crash in between leaves a claim whose holder is gone, which
        # the next claim of the name takes over.
        self._release_name(tenant_id, name, job_id)

    def next_runs(
        self, tenant_id: str, job_id: str, count: int
    ) -> tuple[JobRecord, list[datetime]]:
        """A job and its next `count` occurrences after now (none once it has completed).

        Computed with the scheduler's own schedule functions, so the preview and the runs agree.
        """
        job = self.get(tenant_id, job_id)
        if job.status == JobStatus.COMPLETED:
            return job, []
        runs = preview(
            job.parsed_schedule(),
            self._svc.clock.now(),
            count,
            start_at=job.first_allowed,
            end_at=job.end_at,
        )
        return job, runs

    def trigger(self, tenant_id: str, job_id: str) -> ExecutionRecord:
        """Run a job once, now, outside its schedule."""
        job = self.get(tenant_id, job_id)
        now = self._svc.clock.now()
        record = ExecutionRecord.for_job(
            job,
            execution_id(job_id, now, manual=True),
            now,
            ExecState.PENDING,
            now,
            trigger="manual",
        )
        lifecycle = self.lifecycle()
        if not self._svc.executions.create(record, check_at_ms=lifecycle.check_at(now)):
            raise ConflictingStateError("triggered twice in the same millisecond; try again")
        lifecycle.dispatch(record, now, job)
        return record

    def lifecycle(self) -> Lifecycle:
        """The execution lifecycle over the tenant's stores (its workflow runs and backfills)."""
        svc = self._svc
        return Lifecycle(svc.settings, svc.jobs, svc.executions, svc.lanes)

    # Executions

    def executions(
        self, tenant_id: str, job_id: str, limit: int, cursor: str | None
    ) -> tuple[list[ExecutionRecord], str | None]:
        try:
            return self._svc.executions.list_for_job(tenant_id, job_id, limit=limit, cursor=cursor)
        except ValueError as exc:
            raise InvalidRequestError(str(exc), [{"field": "cursor", "message": str(exc)}]) from exc

    def execution(self, tenant_id: str, exec_id: str) -> ExecutionRecord:
        try:
            return self._svc.executions.get(tenant_id, exec_id)
        except NotFoundError:
            raise JobNotFoundError(f"execution {exec_id} not found") from None

    def needing_attention(
        self, tenant_id: str, state: str, limit: int, cursor: str | None
    ) -> tuple[list[ExecutionRecord], str | None]:
        try:
            return self._svc.executions.needing_attention(
                tenant_id, ExecState(state), limit=limit, cursor=cursor
            )
        except ValueError as exc:
            raise InvalidRequestError(str(exc), [{"field": "cursor", "message": str(exc)}]) from exc

    def retry_execution(
        self, tenant_id: str, exec_id: str, *, as_was: bool = False
    ) -> ExecutionRecord:
        """Re-run a dead, failed or cancelled execution with a fresh budget of attempts.

        By default the re-run takes the job as it is now (target, payload, timeout, retry
        policy, overlap, lane), because a re-run usually follows a fix made with
        `takt jobs update`; `as_was` re-sends the snapshot the execution was made with, budget
        included, and works for a deleted job too.
        """
        record = self.execution(tenant_id, exec_id)
        if record.run_tasks is not None or record.run_id is not None:
            raise ConflictingStateError(
                f"{exec_id} belongs to a workflow run; re-run it with POST /v1/runs/<run id>/retry"
            )
        if record.state not in (ExecState.DEAD, ExecState.FAILED, ExecState.CANCELLED):
            raise ConflictingStateError(
                f"execution {exec_id} is {record.state.value}; only dead, failed or cancelled "
                "executions can be re-run"
            )
        now_fields: dict[str, Any] = {}
        if as_was:
            budget = record.retry.max_attempts
        else:
            job = self._current_job_for_rerun(tenant_id, record)
            budget = job.retry.max_attempts
            now_fields = {
                "target": job.target,
                "payload_json": json.dumps(job.payload, separators=(",", ":")),
                "timeout_sec": job.timeout_sec,
                "retry": job.retry.model_dump(mode="python"),
                "overlap": job.overlap,
                "lane": job.priority,
                "job_version": job.version,
            }
        now = self._svc.clock.now()
        check_at = now + timedelta(seconds=self._svc.settings.pending_resend_after_sec)
        try:
            updated = self._svc.executions.transition(
                tenant_id,
                exec_id,
                Transition(
                    expect={"state": record.state, "attempt": record.attempt},
                    set={
                        **now_fields,
                        "state": ExecState.PENDING,
                        "attempt": record.attempt + 1,
                        "max_attempts": record.attempt + budget,
                        "open_shard": open_shard_of(exec_id, self._svc.executions.open_shards),
                        "check_at": to_ms(check_at),
                        "reason": "re-run requested as it was" if as_was else "re-run requested",
                    },
                    remove=("finished_at", "lease_token", "lease_expires_at", "cancel_requested"),
                ),
            )
        except ConflictError:
            raise ConflictingStateError(f"execution {exec_id} changed meanwhile") from None
        self._send(updated, updated.attempt)
        return updated

    def _current_job_for_rerun(self, tenant_id: str, record: ExecutionRecord) -> JobRecord:
        """The job a default re-run takes its definition from; 409 when there is none to take."""
        try:
            job = self._svc.jobs.get(tenant_id, record.job_id)
        except NotFoundError:
            raise ConflictingStateError(
                f"job {record.job_id} no longer exists; re-run the execution as it was "
                "(--as-was, or as_was: true)"
            ) from None
        if job.tasks:
            raise ConflictingStateError(
                f"job {record.job_id} is a workflow now; re-run the execution as it was "
                "(--as-was, or as_was: true)"
            )
        return job

    def retry_dead_of_job(
        self, tenant_id: str, job_id: str, *, state: str, as_was: bool, limit: int
    ) -> tuple[list[ExecutionRecord], list[tuple[str, str]], bool]:
        """Re-run up to `limit` of a job's executions in `state` (dead or failed).

        Returns (re-run executions, (execution id, why not) for those refused, whether more
        remain). It walks the tenant's attention index, which holds only executions that need a
        person, so the walk is bounded by those, not by the job's whole history; a re-run
        execution leaves the index, so calling again picks up where this call stopped.
        """
        self.get(tenant_id, job_id)
        done: list[ExecutionRecord] = []
        refused: list[tuple[str, str]] = []
        cursor: str | None = None
        for _ in range(BULK_RERUN_PAGES):
            page, cursor = self.needing_attention(tenant_id, state, 200, cursor)
            for record in page:
                if record.job_id != job_id or record.state.value != state:
                    continue
                if len(done) + len(refused) >= limit:
                    return done, refused, True
                try:
                    done.append(self.retry_execution(tenant_id, record.execution_id, as_was=as_was))
                except ConflictingStateError as exc:
                    refused.append((record.execution_id, exc.detail))
            if cursor is None:
                return done, refused, False
        return done, refused, True

    def cancel_execution(self, tenant_id: str, exec_id: str) -> ExecutionRecord:
        """Cancel an execution: at once if it waits, through its worker if it runs.

        A waiting execution (pending, queued, retry_wait) becomes cancelled now; its message, if
        one is in flight, then finds nothing to lease. A running one gets `cancel_requested`,
        which its worker reads at its next heartbeat and the watchdog reads if the worker died;
        both then complete it as cancelled. Each write is conditional on the state read, so a
        race with a worker is retried from a fresh read, a few times.
        """
        for _ in range(3):
            record = self.execution(tenant_id, exec_id)
            if record.run_tasks is not None:
                raise ConflictingStateError(
                    f"{exec_id} is a workflow run; cancel its tasks' executions instead"
                )
            if record.state.terminal:
                raise ConflictingStateError(
                    f"execution {exec_id} is {record.state.value}; only an unfinished execution "
                    "can be cancelled"
                )
            try:
                return self._cancel(record)
            except ConflictError:
                continue
        raise ConflictingStateError(f"execution {exec_id} keeps changing; try again")

    def _cancel(self, record: ExecutionRecord) -> ExecutionRecord:
        now = self._svc.clock.now()
        running = record.state == ExecState.RUNNING
        reason = "cancel requested" if running else "cancelled before it ran"
        return self.lifecycle().cancel(record, now, reason=reason)

    def _check_target_region(self, job: JobRecord) -> None:
        """Queue-topic targets are published with this deployment's clients, in its region."""
        targets = [("target", job.target)]
        if job.tasks:
            targets = [(f"tasks[{i}].target", t.target) for i, t in enumerate(job.tasks)]
        if job.notify is not None:
            targets.append(("notify.to", job.notify.to))
        for field, target in targets:
            region = getattr(parse_target(target), "region", None)
            if region is not None and region != self._svc.settings.region:
                message = f"target is in {region}; this deployment publishes in " + (
                    self._svc.settings.region
                )
                raise InvalidRequestError(message, [{"field": field, "message": message}])

    def _check_http_target(self, job: JobRecord) -> None:
        """An HTTP target the worker would refuse on sight (a workflow's task targets too) is
        refused now (docs/SECURITY.md)."""
        targets = [("", job.target)]
        if job.tasks:
            targets = [(f"tasks[{i}].", t.target) for i, t in enumerate(job.tasks)]
        settings = self._svc.settings
        policy = EgressPolicy(settings.egress_allow)
        problems: list[tuple[str, str]] = []
        for prefix, target in targets:
            spec = parse_target(target)
            if isinstance(spec, HttpSpec):
                found = definition_problems(spec, job.tenant_id, policy, settings.secret_prefix)
                problems.extend((prefix + field, text) for field, text in found)
        if job.notify is not None:
            spec = parse_target(job.notify.to)
            if isinstance(spec, HttpSpec):
                found = definition_problems(spec, job.tenant_id, policy, settings.secret_prefix)
                # A webhook's own fields are `notify.to`, whichever part of it is wrong.
                problems.extend(("notify.to", text) for _, text in found)
        if problems:
            raise InvalidRequestError(
                problems[0][1], [{"field": field, "message": text} for field, text in problems]
            )

    def _send(self, record: ExecutionRecord, attempt: int) -> None:
        self._svc.lanes.send([Outgoing.of(record, attempt)])
