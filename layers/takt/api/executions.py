"""The execution commands of the API: read an execution or a page of them, re-run, cancel.

Commands on jobs are in `takt.api.jobs`. Each write is conditional on the state read, so a race
with a worker or the watchdog is refused (409) or retried from a fresh read, never applied over
what it did not see.
"""

from __future__ import annotations

import json
from typing import Any

from takt.api.dependencies import Api, TenantData
from takt.api.errors import ConflictingStateError, cursor_errors, store_errors
from takt.executions.rules import RERUNNABLE
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.store.errors import ConflictError, NotFoundError

# How many pages of the attention index one bulk re-run reads at most (200 executions each).
BULK_RERUN_PAGES = 10


class ExecutionService:
    """The execution commands of one API (its settings, clock and tenants' data)."""

    def __init__(self, api: Api) -> None:
        self._api = api

    def _data(self, tenant_id: str) -> TenantData:
        return self._api.tenant(tenant_id)

    def of_job(
        self, tenant_id: str, job_id: str, limit: int, cursor: str | None
    ) -> tuple[list[ExecutionRecord], str | None]:
        """A page of a job's executions, newest first. A deleted job's history stays readable
        until it expires; a job that never existed (or is another tenant's) is 404."""
        with cursor_errors():
            records, next_cursor = self._data(tenant_id).executions.list_for_job(
                tenant_id,
                job_id,
                limit=limit,
                cursor=cursor,
                on_unreadable=self._api.parked("executions", tenant_id),
            )
        if not records and cursor is None:
            with store_errors(f"job {job_id}"):
                self._data(tenant_id).jobs.get(tenant_id, job_id)
        return records, next_cursor

    def get(self, tenant_id: str, exec_id: str) -> ExecutionRecord:
        with store_errors(f"execution {exec_id}"):
            return self._data(tenant_id).executions.get(tenant_id, exec_id)

    def needing_attention(
        self, tenant_id: str, state: str, limit: int, cursor: str | None
    ) -> tuple[list[ExecutionRecord], str | None]:
        with cursor_errors():
            return self._data(tenant_id).executions.needing_attention(
                tenant_id,
                ExecState(state),
                limit=limit,
                cursor=cursor,
                on_unreadable=self._api.parked("executions", tenant_id),
            )

    def retry_execution(
        self, tenant_id: str, exec_id: str, *, as_was: bool = False
    ) -> ExecutionRecord:
        """Re-run a dead, failed or cancelled execution with a fresh budget of attempts.

        By default the re-run takes the job as it is now (target, payload, timeout, retry
        policy, overlap, lane), because a re-run usually follows a fix made with
        `takt jobs update`; `as_was` re-sends the snapshot the execution was made with, budget
        included, and works for a deleted job too.
        """
        record = self.get(tenant_id, exec_id)
        if record.run_tasks is not None or record.run_id is not None:
            raise ConflictingStateError(
                f"{exec_id} belongs to a workflow run; re-run it with POST /v1/runs/<run id>/retry"
            )
        if record.state not in RERUNNABLE:
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
        reason = "re-run requested as it was" if as_was else "re-run requested"
        with store_errors(f"execution {exec_id}"):
            return self._data(tenant_id).lifecycle.rerun(
                record, self._api.clock.now(), budget=budget, definition=now_fields, reason=reason
            )

    def _current_job_for_rerun(self, tenant_id: str, record: ExecutionRecord) -> JobRecord:
        """The job a default re-run takes its definition from; 409 when there is none to take."""
        try:
            job = self._data(tenant_id).jobs.get(tenant_id, record.job_id)
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
        with store_errors(f"job {job_id}"):
            self._data(tenant_id).jobs.get(tenant_id, job_id)
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
            record = self.get(tenant_id, exec_id)
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
        now = self._api.clock.now()
        running = record.state == ExecState.RUNNING
        reason = "cancel requested" if running else "cancelled before it ran"
        return self._data(record.tenant_id).lifecycle.cancel(record, now, reason=reason)
