"""The history checker: judges what the tables and lanes hold against what was due.

After a scenario (crashes, duplicate claims, lost responses), a test states for each job which
occurrences had to run, which had to be recorded as skipped, and where the job must end. The
checker reads the executions, the job, the due index and the lanes, and reports every breach of
DESIGN invariants 1-3 by name: occurrences missed, occurrences dispatched more than once,
executions for instants that were not due, a job left at the wrong next run time or without
exactly one live due item, and pending executions with no message.

It reads the tables raw, with the boto3 client and its own parsing of the items (never takt's
stores, whose bugs it would share), so a verdict owes nothing to the code it judges. takt's own
count of the reports it refused (`fenced_reports` on each item) is kept apart as `takt_fenced`:
takt's account of itself, which a scenario may check besides, never instead of, what it saw.

`judge` turns that into a fault scenario's `ChaosReport`, adding what only the side-effect log
the test's targets write can tell (an occurrence that never reached its target, how many times
each did, how late) and the duplicate completions in each execution's attempt log.
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from takt.config import LANES
from takt.models.lanes import LaneMessage
from takt.models.records import ExecState
from takt.wiring import Services
from tests.support.lanes import drain

# The due table's rows that are not due items: the watermark, the claims' watch lists and the
# minutes' sampled counts (the hot minute split, written for about one due item in 16), by their
# prefixes as written, so the checker reads no takt store module.
NOT_DUE_ITEMS = ("meta#", "watch#", "count#")


@dataclass(frozen=True)
class SeenAttempt:
    """One entry of an execution's attempt log, as the item holds it."""

    attempt: int
    outcome: str


@dataclass(frozen=True)
class SeenExecution:
    """One execution as the executions table holds it, parsed here from the raw item."""

    execution_id: str
    scheduled_time: datetime
    state: ExecState
    attempt: int
    attempts: tuple[SeenAttempt, ...]
    reason: str | None
    takt_fenced: int  # takt's own count of refused reports: its account, never a verdict

    @classmethod
    def of(cls, item: dict[str, Any]) -> SeenExecution:
        return cls(
            execution_id=item["execution_id"]["S"],
            scheduled_time=_instant(item["scheduled_time"]["S"]),
            state=ExecState(item["state"]["S"]),
            attempt=int(item["attempt"]["N"]),
            attempts=tuple(
                SeenAttempt(int(a["M"]["attempt"]["N"]), a["M"]["outcome"]["S"])
                for a in item.get("attempts", {}).get("L", [])
            ),
            reason=item.get("reason", {}).get("S"),
            takt_fenced=int(item.get("fenced_reports", {}).get("N", "0")),
        )


@dataclass(frozen=True)
class SeenDue:
    """One due item, its key `<due ms>#<tenant>#<job>` split here (a late item's key starts
    with `~`; takt.store.due)."""

    tenant_id: str
    job_id: str
    due: datetime

    @classmethod
    def of(cls, item: dict[str, Any]) -> SeenDue:
        due_ms, tenant_id, job_id = item["due_key"]["S"].removeprefix("~").split("#", 2)
        return cls(tenant_id, job_id, datetime.fromtimestamp(int(due_ms) / 1000, UTC))


def _instant(text: str) -> datetime:
    """An RFC 3339 instant as the tables write it ("...Z"), aware and in UTC."""
    return datetime.fromisoformat(text).astimezone(UTC)


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
    stale_due: list[SeenDue] = field(default_factory=list)
    takt_fenced: int = 0
    messages: list[LaneMessage] = field(default_factory=list)
    executions: dict[str, list[SeenExecution]] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """Every breach, one line each; a correct history has none (stale due items are
        allowed: they are the system absorbing a fault, not a fault)."""
        return [
            *(f"missed: {m}" for m in self.missed),
            *(f"duplicated: {d}" for d in self.duplicated),
            *(f"unexpected: {u}" for u in self.unexpected),
            *(f"wrong kind: {w}" for w in self.wrong_kind),
            *(f"position: {p}" for p in self.position),
            *(f"unsent: {u}" for u in self.unsent),
        ]


class HistoryChecker:
    """Reads `svc`'s tables and lanes with its clients; never through its stores."""

    def __init__(self, svc: Services) -> None:
        self._db = svc.clients.dynamodb
        self._settings = svc.settings
        self._svc = svc  # for `drain`, which reads the lanes with the SQS client

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
                report.takt_fenced += record.takt_fenced
                if (
                    record.state == ExecState.PENDING
                    and not sent[(record.execution_id, record.attempt)]
                ):
                    report.unsent.append(f"{record.execution_id} attempt {record.attempt}")
        return report

    def executions(self, tenant_id: str, job_id: str) -> list[SeenExecution]:
        """The job's executions, read consistently from its partition, oldest first."""
        out: list[SeenExecution] = []
        kwargs: dict[str, Any] = {
            "TableName": self._settings.executions_table,
            "KeyConditionExpression": "job_key = :k",
            "ExpressionAttributeValues": {":k": {"S": f"{tenant_id}#{job_id}"}},
            "ConsistentRead": True,
        }
        while True:
            resp = self._db.query(**kwargs)
            out.extend(SeenExecution.of(item) for item in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                return out
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def job_item(self, tenant_id: str, job_id: str) -> dict[str, Any] | None:
        """The job's item as the table holds it (None when there is none)."""
        resp = self._db.get_item(
            TableName=self._settings.jobs_table,
            Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = resp.get("Item")
        return item

    def due_items(self) -> list[SeenDue]:
        """Every due item in the table still to claim: the watermark row, the claims' watch
        lists, the partitions' cursor items (key `~`) and the items at or before their
        partition's cursor (a claim passed them: their time to live removes them) excluded."""
        raw: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self._settings.due_table, "ConsistentRead": True}
        while True:
            resp = self._db.scan(**kwargs)
            raw.extend(
                i for i in resp.get("Items", []) if not i["bucket"]["S"].startswith(NOT_DUE_ITEMS)
            )
            if "LastEvaluatedKey" not in resp:
                break
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        cursors = {i["bucket"]["S"]: i["at"]["S"] for i in raw if i["due_key"]["S"] == "~"}
        items: list[SeenDue] = []
        for item in raw:
            key = item["due_key"]["S"]
            if key == "~" or (
                not key.startswith("~") and key <= cursors.get(item["bucket"]["S"], "")
            ):
                continue
            try:
                items.append(SeenDue.of(item))
            except (KeyError, ValueError):
                continue  # a bad record a scenario planted: not one of the jobs judged
        return items

    @staticmethod
    def _judge_occurrences(expect: Expect, records: list[SeenExecution], report: Report) -> None:
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

    def _judge_position(self, expect: Expect, due: list[SeenDue], report: Report) -> None:
        job = self.job_item(expect.tenant_id, expect.job_id)
        mine = [d for d in due if (d.tenant_id, d.job_id) == (expect.tenant_id, expect.job_id)]
        if job is None:
            report.position.append(f"{expect.job_id} is gone")
            return
        next_run = _instant(job["next_run_time"]["S"]) if "next_run_time" in job else None
        if next_run != expect.next_run_time:
            report.position.append(
                f"{expect.job_id} next_run_time is {next_run}, expected {expect.next_run_time}"
            )
        status = job["status"]["S"]
        if expect.next_run_time is None and status != "completed":
            report.position.append(f"{expect.job_id} is {status}, expected completed")
        live = [d for d in mine if next_run is not None and d.due == next_run]
        wanted_live = 0 if next_run is None else 1
        if len(live) != wanted_live:
            report.position.append(
                f"{expect.job_id} has {len(live)} live due items, expected {wanted_live}"
            )
        report.stale_due.extend(d for d in mine if d not in live)


TERMINAL_OUTCOMES = frozenset(
    {ExecState.SUCCEEDED.value, ExecState.FAILED.value, ExecState.DEAD.value, "cancelled"}
)


@dataclass(frozen=True)
class Effect:
    """One side effect a test's target performed: which execution and attempt, and when (on the
    true clock of the scenario)."""

    job_id: str
    execution_id: str
    attempt: int
    scheduled: datetime
    at: datetime


class EffectLog:
    """The side-effect log: one JSON line per call a target received, appended by the targets
    (registered handlers, or a loopback HTTP receiver) and read back by the checker."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, effect: Effect) -> None:
        line = json.dumps(
            {
                "job_id": effect.job_id,
                "execution_id": effect.execution_id,
                "attempt": effect.attempt,
                "scheduled": effect.scheduled.isoformat(),
                "at": effect.at.isoformat(),
            }
        )
        with self._lock, self.path.open("a") as sink:
            sink.write(line + "\n")

    def read(self) -> list[Effect]:
        if not self.path.exists():
            return []
        return [
            Effect(
                job_id=row["job_id"],
                execution_id=row["execution_id"],
                attempt=row["attempt"],
                scheduled=datetime.fromisoformat(row["scheduled"]),
                at=datetime.fromisoformat(row["at"]),
            )
            for row in map(json.loads, self.path.read_text().splitlines())
        ]


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of `values` (0 when there are none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass
class ChaosReport:
    """What one fault scenario did to the history, in the figures docs/RELIABILITY.md reports.

    The invariants: nothing `missed` and nothing left `unfinished`; `duplicate_executions` and
    `duplicate_completions` are 0; `fenced` (stale reports DynamoDB refused, as the scenario's
    wire tap saw them: `tests.chaos.oracle.stale_reports_refused`) is above 0 where the scenario
    provokes stale reports. `takt_fenced` is takt's own count of them, its account of itself.
    `effects_per_occurrence` maps a count of side effects to how many occurrences had it (at
    least once: 2 is allowed, 0 is a loss). Lateness is from an occurrence's scheduled
    time to its first side effect (a negative minimum is an early start); recovery is from the
    end of the fault until every occurrence due by then had its first side effect.
    """

    scenario: str
    seed: int
    form: str
    occurrences: int = 0
    executions: int = 0
    missed: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    duplicate_executions: list[str] = field(default_factory=list)
    duplicate_completions: list[str] = field(default_factory=list)
    other_problems: list[str] = field(default_factory=list)
    fenced: int = 0
    takt_fenced: int = 0
    effects_per_occurrence: dict[str, int] = field(default_factory=dict)
    lateness_sec: dict[str, float] = field(default_factory=dict)
    recovery_sec: float | None = None
    faults: dict[str, object] = field(default_factory=dict)
    extra: dict[str, object] = field(default_factory=dict)

    def problems(self) -> list[str]:
        return [
            *(f"missed: {m}" for m in self.missed),
            *(f"unfinished: {u}" for u in self.unfinished),
            *(f"duplicate execution: {d}" for d in self.duplicate_executions),
            *(f"duplicate completion: {d}" for d in self.duplicate_completions),
            *self.other_problems,
        ]

    def write(self, directory: Path) -> Path:
        """Write the report as JSON under `directory` (test-artifacts/chaos/)."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.scenario}.json"
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        return path


def judge(
    checker: HistoryChecker,
    report: ChaosReport,
    expectations: Iterable[Expect],
    effects: Sequence[Effect],
    *,
    fault_end: datetime | None = None,
    finished: frozenset[ExecState] = frozenset({ExecState.SUCCEEDED}),
) -> ChaosReport:
    """Fill `report` from the tables, the lanes (drained) and the side-effect log.

    Every occurrence the expectations say must run has to end in one of `finished` states and
    have at least one side effect; skipped ones must have none. Completions are counted from
    each execution's attempt log, where every accepted terminal write appends exactly one entry.
    """
    expectations = list(expectations)
    history = checker.check(expectations)
    report.takt_fenced = history.takt_fenced
    report.duplicate_executions = list(history.duplicated)
    report.other_problems = [
        p for p in history.problems() if not p.startswith(("missed: ", "duplicated: ", "unsent: "))
    ]
    report.missed = list(history.missed)
    # The store's key makes two executions of one occurrence impossible to write; the targets
    # would see them as two execution ids for one (job, scheduled time).
    ids: dict[tuple[str, datetime], set[str]] = {}
    for effect in effects:
        ids.setdefault((effect.job_id, effect.scheduled), set()).add(effect.execution_id)
    report.duplicate_executions.extend(
        f"{job_id} @ {at.isoformat()} reached its target as {sorted(seen)}"
        for (job_id, at), seen in ids.items()
        if len(seen) > 1
    )
    by_execution = Counter(e.execution_id for e in effects)
    first: dict[str, datetime] = {}
    for effect in effects:
        if effect.execution_id not in first or effect.at < first[effect.execution_id]:
            first[effect.execution_id] = effect.at
    lateness: list[float] = []
    recovered: list[float] = []
    histogram: Counter[int] = Counter()
    for expect in expectations:
        records = history.executions[expect.job_id]
        report.executions += len(records)
        wanted = set(expect.run)
        for record in records:
            completions = [a for a in record.attempts if a.outcome in TERMINAL_OUTCOMES]
            if len(completions) > 1:
                report.duplicate_completions.append(
                    f"{record.execution_id}: {[a.outcome for a in completions]}"
                )
            if record.scheduled_time not in wanted:
                if by_execution[record.execution_id]:
                    report.other_problems.append(f"side effect of skipped {record.execution_id}")
                continue
            report.occurrences += 1
            histogram[by_execution[record.execution_id]] += 1
            if record.state not in finished:
                report.unfinished.append(f"{record.execution_id} is {record.state.value}")
            if record.execution_id not in first:
                report.missed.append(f"{record.execution_id} had no side effect")
                continue
            late = (first[record.execution_id] - record.scheduled_time).total_seconds()
            lateness.append(late)
            if fault_end is not None and record.scheduled_time <= fault_end:
                recovered.append((first[record.execution_id] - fault_end).total_seconds())
    report.effects_per_occurrence = {str(k): v for k, v in sorted(histogram.items())}
    report.lateness_sec = {
        "min": min(lateness, default=0.0),
        "p50": percentile(lateness, 0.5),
        "p99": percentile(lateness, 0.99),
        "max": max(lateness, default=0.0),
    }
    if fault_end is not None:
        report.recovery_sec = max(0.0, *recovered) if recovered else 0.0
    return report
