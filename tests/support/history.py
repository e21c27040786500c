"""The history checker: judges what the tables and lanes hold against what was due.

After a scenario (crashes, duplicate claims, lost responses), a test states for each job which
occurrences had to run, which had to be recorded as skipped, and where the job must end. The
checker reads the executions, the job, the due index and the lanes, and reports every breach of
DESIGN invariants 1-3 by name: occurrences missed, occurrences dispatched more than once,
executions for instants that were not due, a job left at the wrong next run time or without
exactly one live due item, pending executions with no message, and fenced-out reports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from takt.config import LANES
from takt.dispatch.lanes import LaneMessage
from takt.models.records import ExecState, ExecutionRecord, JobRecord, JobStatus
from takt.store.due import DueItem
from takt.store.errors import NotFoundError
from takt.wiring import Services
from tests.support.lanes import drain


@dataclass(frozen=True)
class Expect:
    """What must be true of one job: `run` and `skipped` occurrences, and its final position."""

    job_id: str
    run: Sequence[datetime]
    next_run_time: datetime | None
    skipped: Sequence[datetime] = ()
    tenant_id: str = "tenant-a"


@dataclass
class Report:
    missed: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    wrong_kind: list[str] = field(default_factory=list)
    position: list[str] = field(default_factory=list)
    unsent: list[str] = field(default_factory=list)
    stale_due: list[DueItem] = field(default_factory=list)
    fenced: int = 0
    messages: list[LaneMessage] = field(default_factory=list)
    executions: dict[str, list[ExecutionRecord]] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """Every breach, one line each; a correct history has none (stale due items and
        fenced reports are allowed: they are the system absorbing a fault, not a fault)."""
        return [
            *(f"missed: {m}" for m in self.missed),
            *(f"duplicated: {d}" for d in self.duplicated),
            *(f"unexpected: {u}" for u in self.unexpected),
            *(f"wrong kind: {w}" for w in self.wrong_kind),
            *(f"position: {p}" for p in self.position),
            *(f"unsent: {u}" for u in self.unsent),
        ]


class HistoryChecker:
    def __init__(self, svc: Services) -> None:
        self._svc = svc

    def check(self, expectations: Iterable[Expect]) -> Report:
        """Read everything once and judge every expectation. Drains the lanes."""
        report = Report(messages=[m for lane in LANES for m in drain(self._svc, lane)])
        due = self.due_items()
        sent = Counter((m.execution_id, m.attempt) for m in report.messages)
        for expect in expectations:
            records = self.executions(expect.tenant_id, expect.job_id)
            report.executions[expect.job_id] = records
            self._judge_occurrences(expect, records, report)
            self._judge_position(expect, due, report)
            for record in records:
                report.fenced += record.fenced_reports
                if (
                    record.state == ExecState.PENDING
                    and not sent[(record.execution_id, record.attempt)]
                ):
                    report.unsent.append(f"{record.execution_id} attempt {record.attempt}")
        return report

    def executions(self, tenant_id: str, job_id: str) -> list[ExecutionRecord]:
        out: list[ExecutionRecord] = []
        cursor: str | None = None
        while True:
            page, cursor = self._svc.executions.list_for_job(
                tenant_id, job_id, limit=100, cursor=cursor
            )
            out.extend(page)
            if cursor is None:
                return out

    def due_items(self) -> list[DueItem]:
        """Every due item in the table (the watermark row excluded)."""
        items: list[DueItem] = []
        kwargs: dict[str, object] = {"TableName": self._svc.settings.due_table}
        while True:
            resp = self._svc.clients.dynamodb.scan(**kwargs)  # type: ignore[arg-type]
            items.extend(
                DueItem.from_item(i)
                for i in resp.get("Items", [])
                if not i["bucket"]["S"].startswith("meta#")
            )
            if "LastEvaluatedKey" not in resp:
                return items
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    @staticmethod
    def _judge_occurrences(expect: Expect, records: list[ExecutionRecord], report: Report) -> None:
        by_time = Counter(r.scheduled_time for r in records)
        for instant, count in by_time.items():
            if count > 1:
                report.duplicated.append(f"{expect.job_id} @ {instant.isoformat()} x{count}")
        wanted = {t: False for t in expect.run} | {t: True for t in expect.skipped}
        for instant, want_skipped in wanted.items():
            found = [r for r in records if r.scheduled_time == instant]
            if not found:
                report.missed.append(f"{expect.job_id} @ {instant.isoformat()}")
            elif (found[0].state == ExecState.SKIPPED) != want_skipped:
                report.wrong_kind.append(
                    f"{expect.job_id} @ {instant.isoformat()} is {found[0].state.value}, "
                    f"expected {'skipped' if want_skipped else 'a run'}"
                )
        for record in records:
            if record.scheduled_time not in wanted:
                report.unexpected.append(
                    f"{record.execution_id} ({record.state.value}) was not due"
                )

    def _judge_position(self, expect: Expect, due: list[DueItem], report: Report) -> None:
        try:
            job: JobRecord | None = self._svc.jobs.get(expect.tenant_id, expect.job_id)
        except NotFoundError:
            job = None
        mine = [d for d in due if (d.tenant_id, d.job_id) == (expect.tenant_id, expect.job_id)]
        if job is None:
            report.position.append(f"{expect.job_id} is gone")
            return
        if job.next_run_time != expect.next_run_time:
            report.position.append(
                f"{expect.job_id} next_run_time is {job.next_run_time}, "
                f"expected {expect.next_run_time}"
            )
        if expect.next_run_time is None and job.status != JobStatus.COMPLETED:
            report.position.append(f"{expect.job_id} is {job.status.value}, expected completed")
        live = [d for d in mine if job.next_run_time is not None and d.due == job.next_run_time]
        wanted_live = 0 if job.next_run_time is None else 1
        if len(live) != wanted_live:
            report.position.append(
                f"{expect.job_id} has {len(live)} live due items, expected {wanted_live}"
            )
        report.stale_due.extend(d for d in mine if d not in live)
