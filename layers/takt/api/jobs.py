"""The job commands: what each API call on a job does to the tables, in crash-safe order.

What a change does to a job is decided by `takt.api.patch` (pure); this module checks what needs
a table or the deployment's settings and writes. Commands on executions are in
`takt.api.executions`.

The API writes jobs only, never the due index: the jobs table's stream carries every change to
the due indexer (`takt.dispatch.indexer`), which puts the due item of an active job's new
`next_run_time`. A job write that succeeded is in the stream, which Lambda reads until the
indexer has taken it, so a crash of the API after its write loses no index entry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from takt.api.dependencies import Api, TenantData
from takt.api.errors import (
    ApiError,
    ConflictingStateError,
    GoneError,
    IdempotencyMismatchError,
    InvalidRequestError,
    PayloadTooLargeError,
    PreconditionFailedError,
    TooManyRequestsError,
    cursor_errors,
    store_errors,
)
from takt.api.models import JobCreate, JobPatch
from takt.api.patch import apply_patch, check_not_late, check_window, first_run
from takt.models.ids import execution_id, new_job_id, to_ms
from takt.models.records import (
    WORKFLOW_TARGET,
    ExecState,
    ExecutionRecord,
    JobRecord,
    JobStatus,
    success_may_go_unnoted,
)
from takt.models.targets import HttpSpec, parse_target
from takt.parallel import each_in_context
from takt.schedule import preview
from takt.store.errors import ConflictError, NotFoundError
from takt.store.idempotency import IdempotencyRecord
from takt.store.jobs import needs_index
from takt.store.names import FormerHolder, NameTakenError
from takt.targets.egress import EgressPolicy
from takt.targets.http import definition_problems
from takt.tenants import JobLimitError, RateLimitedError
from takt.tenants.limits import retry_after

OUTCOME_THREADS = 16
"""Threads a listing reads its jobs' histories on (`JobService.with_newest_outcomes`). A query
spends most of its time waiting on DynamoDB, and botocore's client is thread-safe; 16 keeps a
page of 200 jobs to 13 rounds of queries and stays within the DynamoDB client's 32 pooled
connections (`takt.aws.client_config`, the tenant sessions' too), so no thread waits for one."""

UPDATE_TRIES = 5
"""Writes an unconditional PATCH makes, each from a fresh read, while other changes keep
winning between its read and its write (`JobService.update`)."""


class _LostRaceError(ConflictingStateError):
    """A PATCH's conditional write found the job at another version than it read."""


def _too_many_jobs(exc: JobLimitError) -> TooManyRequestsError:
    return TooManyRequestsError(
        f"{exc}: delete jobs to create more",
        [{"field": "max_jobs", "message": f"the tenant's limit is {exc.limit} jobs"}],
    )


def body_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _with_newer(job: JobRecord, newer: ExecutionRecord | None) -> JobRecord:
    """`job` naming `newer` as its last run when that is a success it does not note yet."""
    if newer is None or newer.state is not ExecState.SUCCEEDED:
        return job
    return job.model_copy(
        update={
            "last_execution_id": newer.execution_id,
            "last_outcome": ExecState.SUCCEEDED.value,
            "last_run_at": newer.finished_at or job.last_run_at,
        }
    )


class JobService:
    """The job commands of one API (its settings, clock and tenants' data)."""

    def __init__(self, api: Api, tenant: Callable[[str], TenantData] | None = None) -> None:
        self._api = api
        self._tenant = api.tenant if tenant is None else tenant

    def _data(self, tenant_id: str) -> TenantData:
        return self._tenant(tenant_id)

    @contextmanager
    def _at_holder(self, job_id: str) -> Iterator[JobService]:
        """This service over the lease holder's replica, for a change to an existing job (its
        read, its conditional write, its name claims): across regions the holder's replica is
        where the change meets the holder's advances of the job (takt.api.holder). In one
        region, this service itself."""
        holder = self._api.holder
        if holder is None:
            yield self
            return
        with holder.reached(job_id):
            yield JobService(self._api, holder.tenant)

    # Jobs

    def create(
        self, tenant_id: str, body: JobCreate, idempotency_key: str | None
    ) -> tuple[JobRecord, bool]:
        """Create a job; (job, False) when the idempotency key returns an earlier one.

        Everything that can refuse the request runs before the first write, so a refused
        request leaves no idempotency record behind (DESIGN invariant 7): otherwise the
        corrected retry under the same key would be refused as a different body.
        """
        now = self._api.clock.now()
        key = idempotency_key or body.idempotency_key
        # Each field of the body the record has under the same name is stored as given, so a
        # field added to both models is stored with no edit here.
        given = {name: value for name, value in body if name in JobRecord.model_fields}
        job = JobRecord.model_validate(
            {
                **given,
                "tenant_id": tenant_id,
                "job_id": new_job_id(),
                "anchor": body.start_at or now,
                "target": body.target or WORKFLOW_TARGET,
                "status": JobStatus(body.status),
                "idempotency_key": key,
                "created_at": now,
                "updated_at": now,
            }
        )
        check_window(job)
        if not body.run_late:
            check_not_late(job, now)
        job.next_run_time = first_run(job, now)
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

    def _claim_name(self, job: JobRecord, now: datetime) -> None:
        """Claim the job's name for it (409 when another job of the tenant has it)."""
        if job.name is None:
            return

        def holds(holder: str) -> bool:
            try:
                return self._data(job.tenant_id).jobs.get(job.tenant_id, holder).name == job.name
            except NotFoundError:
                return False

        try:
            self._data(job.tenant_id).names.claim(
                job.tenant_id, job.name, job.job_id, to_ms(now), holds
            )
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
        earlier = self._data(tenant_id).idempotency.find(tenant_id, key, now_epoch)
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
            earlier = self._data(tenant_id).idempotency.claim(
                tenant_id, key, job.job_id, digest, now_epoch
            )
            if earlier is not None:
                replayed = self._replay(tenant_id, key, digest, earlier)
                if replayed is not None:
                    return replayed, False
                job.job_id = earlier.job_id
        try:
            self._store(job, key)
        except ConflictError:
            # Another try finishing the same earlier one wrote the job first.
            return self._data(tenant_id).jobs.get(tenant_id, job.job_id), False
        return job, True

    def _store(self, job: JobRecord, key: str | None) -> None:
        """Write and count the job, and mark `key` done with it; 429 at the job limit, giving
        back `key`, claimed for it, so the refused create leaves nothing behind.

        Any other failure gives the key back too when the job is not stored, so a create that
        failed (500) does not hold its key for a different, corrected body. When the failure
        hides a write that happened (a lost answer), the key stays, and a retry finds the job.
        """
        data = self._data(job.tenant_id)
        idempotency = data.idempotency
        done = idempotency.done_item(job.tenant_id, key, job.job_id) if key else None
        self._claim_name(job, job.created_at)
        try:
            data.limiter.create_job(job, done)
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
            self._data(job.tenant_id).jobs.get(job.tenant_id, job.job_id)
        except NotFoundError:
            return False
        return True

    def _release_name(self, tenant_id: str, name: str | None, job_id: str) -> None:
        if name is not None:
            self._data(tenant_id).names.release(tenant_id, name, job_id)

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
            return self._data(tenant_id).jobs.get(tenant_id, earlier.job_id)
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
        earlier = self._data(tenant_id).idempotency.find(tenant_id, key, now_epoch)
        return None if earlier is None else self._replay(tenant_id, key, digest, earlier)

    def _within_limits(self, tenant_id: str, now: datetime) -> None:
        """Refuse a create over the tenant's job limit or creation rate (429), after every
        check of the request itself and the idempotency key's lookup, so neither a bad request
        nor a retry of a create that succeeded spends a token."""
        limiter = self._data(tenant_id).limiter
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

    def _check_payload(self, job: JobRecord) -> None:
        size = len(json.dumps(job.payload, separators=(",", ":")).encode())
        limit = self._api.settings.limits_for(job.tenant_id).max_payload_bytes
        if size > limit:
            raise PayloadTooLargeError(
                f"payload is {size} bytes; the limit is {limit}",
                [{"field": "payload", "message": f"{size} bytes; the limit is {limit}"}],
            )

    def get(self, tenant_id: str, job_id: str) -> JobRecord:
        with store_errors(f"job {job_id}"):
            return self._data(tenant_id).jobs.get(tenant_id, job_id)

    def with_newest_outcome(self, tenant_id: str, job: JobRecord) -> JobRecord:
        """`job` as the API shows it (`with_newest_outcomes`)."""
        [one] = self.with_newest_outcomes(tenant_id, [job])
        return one

    def with_newest_outcomes(self, tenant_id: str, jobs: list[JobRecord]) -> list[JobRecord]:
        """`jobs` with their `last_*` naming each one's newest ended execution: a success that
        changed nothing else is not noted on the job (`Lifecycle._note_outcome`), so a job whose
        noted outcome is a success, or a fired one-off with nothing noted, may have newer ones in
        its history (one query each, newest first).

        A listing has many such jobs, so their queries run at once on `OUTCOME_THREADS` threads: a
        page costs the round trips of its slowest thread, not one per job in a row. Each runs in
        a copy of the caller's context, so what it carries (`takt bench`'s meter counts a call
        under the invocation its context names) follows the query into the pool."""
        # Only where a later success may have gone unnoted can the history hold a newer run.
        looked = [job for job in jobs if success_may_go_unnoted(job.last_outcome, job.status)]
        if not looked:
            return jobs
        executions = self._data(tenant_id).executions

        def newest(job: JobRecord) -> ExecutionRecord | None:
            with store_errors(f"job {job.job_id}"):
                return executions.newest_ended_after(
                    tenant_id, job.job_id, job.last_execution_id, consistent=False
                )

        found = each_in_context(newest, looked, OUTCOME_THREADS, name="shown")
        newer = {job.job_id: record for job, record in zip(looked, found, strict=True)}
        return [_with_newer(job, newer.get(job.job_id)) for job in jobs]

    def list_jobs(
        self,
        tenant_id: str,
        limit: int,
        cursor: str | None,
        status: str | None,
        name_prefix: str | None,
    ) -> tuple[list[JobRecord], str | None]:
        with cursor_errors():
            return self._data(tenant_id).jobs.list(
                tenant_id,
                limit=limit,
                cursor=cursor,
                status=status,
                name_prefix=name_prefix,
                on_unreadable=self._api.parked("jobs", tenant_id),
            )

    def update(
        self, tenant_id: str, job_id: str, patch: JobPatch, if_match: int | None
    ) -> JobRecord:
        """Change a job (`apply_patch`), check what needs a table or the settings, write once.

        The write is conditional on the version read. With `If-Match` a write that finds another
        version is 412: the caller's version is stale. Without it the change applies to the
        latest version (docs/API.md): a write that lost to another change made between its read
        and its write is made again from a fresh read, at most UPDATE_TRIES times (then 409).
        """
        with self._at_holder(job_id) as service:
            return service._update(tenant_id, job_id, patch, if_match)

    def _update(
        self, tenant_id: str, job_id: str, patch: JobPatch, if_match: int | None
    ) -> JobRecord:
        for _ in range(UPDATE_TRIES):
            try:
                return self._update_once(tenant_id, job_id, patch, if_match)
            except _LostRaceError:
                if if_match is not None:
                    raise PreconditionFailedError(
                        f"job {job_id} changed meanwhile; read it again"
                    ) from None
        raise ConflictingStateError(
            f"job {job_id} changed by another request during each of {UPDATE_TRIES} tries; "
            "send the change again"
        )

    def _update_once(
        self, tenant_id: str, job_id: str, patch: JobPatch, if_match: int | None
    ) -> JobRecord:
        current = self.get(tenant_id, job_id)
        if if_match is not None and if_match != current.version:
            raise PreconditionFailedError(
                f"job {job_id} is at version {current.version}, not {if_match}"
            )
        patched = apply_patch(current, patch, self._api.clock.now())
        updated = patched.job
        if patch.target is not None or patch.tasks is not None or patch.notify is not None:
            self._check_target_region(updated)
            self._check_http_target(updated)
        if "calendars" in patch.model_fields_set:
            self._check_calendars(tenant_id, updated.calendars)
        self._check_payload(updated)
        self._write_update(current, updated, patched.written)
        return self.get(tenant_id, job_id)

    def _write_update(
        self, current: JobRecord, updated: JobRecord, written: frozenset[str]
    ) -> None:
        """Write an update; a new name is claimed first and the old one given back after.
        _LostRaceError when the job is no longer at the version read."""
        tenant_id, job_id = current.tenant_id, current.job_id
        renamed = updated.name != current.name
        if renamed:
            self._claim_name(updated, updated.updated_at)
        try:
            with store_errors(f"job {job_id}", changed=_LostRaceError):
                self._data(tenant_id).jobs.update_definition(
                    updated,
                    current.version,
                    set(written),
                    mark_unindexed=needs_index(current, updated),
                )
        except ApiError:
            if renamed:
                self._release_name(tenant_id, updated.name, job_id)
            raise
        if renamed:
            self._release_name(tenant_id, current.name, job_id)

    def _check_calendars(self, tenant_id: str, names: list[str] | None) -> None:
        """Refuse (400, naming `calendars`) a job that names a calendar the tenant lacks."""
        for name in names or []:
            try:
                self._data(tenant_id).calendars.get(tenant_id, name)
            except NotFoundError:
                message = f"no calendar named {name!r}: create it with POST /v1/calendars"
                raise InvalidRequestError(
                    message, [{"field": "calendars", "message": message}]
                ) from None

    def delete(self, tenant_id: str, job_id: str) -> None:
        """Delete a job, in the lease holder's replica across regions (`_at_holder`)."""
        with self._at_holder(job_id) as service:
            service._delete(tenant_id, job_id)

    def _delete(self, tenant_id: str, job_id: str) -> None:
        name = self.get(tenant_id, job_id).name
        data = self._data(tenant_id)
        with store_errors(f"job {job_id}"):
            data.limiter.delete_job(tenant_id, job_id)
        # After the job is gone: a crash in between leaves a claim whose holder is gone, which
        # the next claim of the name takes over.
        self._release_name(tenant_id, name, job_id)
        if name is not None:
            # Its history stays reachable by the name for as long as its executions are kept.
            deleted_ms = int(self._api.clock.now().timestamp() * 1000)
            until_ms = deleted_ms + data.executions.retention_sec * 1000
            data.names.remember_deleted(tenant_id, name, job_id, deleted_ms, until_ms)

    def deleted_holders(self, tenant_id: str, name: str) -> list[FormerHolder]:
        """The deleted jobs that had `name`, newest first, while their history is kept."""
        now_ms = int(self._api.clock.now().timestamp() * 1000)
        return self._data(tenant_id).names.deleted_holders(tenant_id, name, now_ms)

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
            self._api.clock.now(),
            count,
            start_at=job.first_allowed,
            end_at=job.end_at,
        )
        return job, runs

    def trigger(self, tenant_id: str, job_id: str) -> ExecutionRecord:
        """Run a job once, now, outside its schedule."""
        job = self.get(tenant_id, job_id)
        now = self._api.clock.now()
        record = ExecutionRecord.for_job(
            job,
            execution_id(job_id, now, manual=True),
            now,
            ExecState.PENDING,
            now,
            trigger="manual",
        )
        data = self._data(tenant_id)
        if not data.executions.create(record, check_at_ms=data.lifecycle.check_at(now)):
            raise ConflictingStateError("triggered twice in the same millisecond; try again")
        data.lifecycle.dispatch(record, now, job)
        return record

    def _check_target_region(self, job: JobRecord) -> None:
        """Queue-topic targets are published with this deployment's clients, in its region."""
        targets = [("target", job.target)]
        if job.tasks:
            targets = [(f"tasks[{i}].target", t.target) for i, t in enumerate(job.tasks)]
        if job.notify is not None:
            targets.append(("notify.to", job.notify.to))
        for field, target in targets:
            region = getattr(parse_target(target), "region", None)
            if region is not None and region != self._api.settings.region:
                message = f"target is in {region}; this deployment publishes in " + (
                    self._api.settings.region
                )
                raise InvalidRequestError(message, [{"field": field, "message": message}])

    def _check_http_target(self, job: JobRecord) -> None:
        """An HTTP target the worker would refuse on sight (a workflow's task targets too) is
        refused now (docs/SECURITY.md)."""
        targets = [("", job.target)]
        if job.tasks:
            targets = [(f"tasks[{i}].", t.target) for i, t in enumerate(job.tasks)]
        settings = self._api.settings
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
