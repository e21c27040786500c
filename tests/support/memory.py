"""In-memory stand-ins for the jobs and executions tables and the lanes, for unit tests of the
execution lifecycle's decisions (tests/unit/executions).

`MemoryExecutions.transition` evaluates a `Transition` as DynamoDB evaluates the conditional
update `ExecutionStore.transition` builds from it: the item must exist, every `expect` must hold
(one of a tuple's values), no `expect_absent` attribute may exist; a failed fence raises
ExecutionConflictError carrying the execution as it is (as `ALL_OLD` on a failed condition
returns it), a missing item NotFoundError. Items are kept as DynamoDB attribute maps, so values
compare as the table compares them. The moto integration tests check that the real expressions
agree.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from takt.models.lanes import Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.store.errors import ExecutionConflictError, NotFoundError
from takt.store.executions import ExecutionStore, Transition, open_shard_of
from takt.store.items import execution_item, execution_record, to_attr_map
from takt.store.jobs import JobStore, OutcomeNote

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
_NO_CLIENT = cast("DynamoDBClient", None)


def _typed(value: Any) -> Any:
    plain = value.value if isinstance(value, ExecState) else value
    return to_attr_map({"v": plain})["v"]


class MemoryExecutions(ExecutionStore):
    """The executions table as a dict of items keyed by (tenant, execution id)."""

    def __init__(self, open_shards: int = 4) -> None:
        super().__init__(_NO_CLIENT, "executions", open_shards, 86_400)
        self.items: dict[tuple[str, str], Item] = {}

    def create(self, record: ExecutionRecord, *, check_at_ms: int | None) -> bool:
        key = (record.tenant_id, record.execution_id)
        if key in self.items:
            return False
        shard = (
            None if record.state.terminal else open_shard_of(record.execution_id, self.open_shards)
        )
        self.items[key] = execution_item(
            record,
            open_shard=shard,
            check_at=None if shard is None else check_at_ms,
            expires_at=int(record.created_at.timestamp()) + 86_400,
        )
        return True

    def get(self, tenant_id: str, execution_id: str, *, consistent: bool = True) -> ExecutionRecord:
        return execution_record(self._item(tenant_id, execution_id))

    def attr(self, record: ExecutionRecord, name: str) -> Any:
        """One attribute of the stored item as a plain value (None when absent)."""
        value = self._item(record.tenant_id, record.execution_id).get(name)
        if value is None:
            return None
        if "N" in value:
            return int(value["N"])
        return value.get("S", value.get("BOOL"))

    def _item(self, tenant_id: str, execution_id: str) -> Item:
        try:
            return self.items[(tenant_id, execution_id)]
        except KeyError:
            raise NotFoundError(execution_id) from None

    def transition(self, tenant_id: str, execution_id: str, change: Transition) -> ExecutionRecord:
        item = self._item(tenant_id, execution_id)
        holds = all(
            item.get(attr) in [_typed(o) for o in (want if isinstance(want, tuple) else (want,))]
            for attr, want in change.expect.items()
        ) and not any(attr in item for attr in change.expect_absent)
        if not holds:
            raise ExecutionConflictError(
                f"execution {execution_id} changed", execution_record(item)
            )
        new = dict(item)
        for attr, value in change.set.items():
            new[attr] = _typed(value)
        for attr, value in change.set_if_absent.items():
            new.setdefault(attr, _typed(value))
        if change.append_attempt is not None:
            earlier = new.get("attempts", {"L": []})["L"]
            new["attempts"] = {"L": [*earlier, _typed(change.append_attempt)]}
        for attr in change.remove:
            new.pop(attr, None)
        for attr, amount in change.add.items():
            new[attr] = {"N": str(int(new.get(attr, {"N": "0"})["N"]) + amount)}
        self.items[(tenant_id, execution_id)] = new
        return execution_record(new)

    def first_queued(self, tenant_id: str, job_id: str) -> ExecutionRecord | None:
        queued = sorted(
            (item["sk"]["S"], item)
            for (tenant, _), item in self.items.items()
            if tenant == tenant_id
            and item["job_id"]["S"] == job_id
            and item["state"]["S"] == ExecState.QUEUED.value
        )
        return execution_record(queued[0][1]) if queued else None

    def record_fenced(self, tenant_id: str, execution_id: str) -> None:
        self.transition(tenant_id, execution_id, Transition(expect={}, add={"fenced_reports": 1}))


class MemoryJobs(JobStore):
    """The jobs table's overlap slots and noted outcomes."""

    def __init__(self) -> None:
        super().__init__(_NO_CLIENT, "jobs")
        self.jobs: dict[tuple[str, str], JobRecord] = {}
        self.outcomes: list[tuple[str, str]] = []

    def put(self, job: JobRecord) -> JobRecord:
        self.jobs[(job.tenant_id, job.job_id)] = job
        return job

    def get(self, tenant_id: str, job_id: str, *, consistent: bool = True) -> JobRecord:
        try:
            return self.jobs[(tenant_id, job_id)]
        except KeyError:
            raise NotFoundError(job_id) from None

    def take_slot(
        self, tenant_id: str, job_id: str, execution_id: str, *, expected: str | None
    ) -> bool:
        job = self.get(tenant_id, job_id)
        if job.active_execution != expected:
            return False
        self.put(job.model_copy(update={"active_execution": execution_id}))
        return True

    def release_slot(self, tenant_id: str, job_id: str, execution_id: str) -> None:
        job = self.get(tenant_id, job_id)
        if job.active_execution == execution_id:
            self.put(job.model_copy(update={"active_execution": None}))

    def outcome_settled(self, tenant_id: str, job_id: str) -> bool:
        """Never: these jobs keep no noted outcome, so every outcome is noted (`outcomes`)."""
        return False

    def record_outcome(
        self, tenant_id: str, job_id: str, execution_id: str, outcome: str, at: datetime
    ) -> OutcomeNote | None:
        self.outcomes.append((execution_id, outcome))
        return None


class MemoryLanes:
    """The lanes: every message sent, in order."""

    def __init__(self) -> None:
        self.sent: list[Outgoing] = []

    def send(self, outgoing: list[Outgoing]) -> int:
        self.sent.extend(outgoing)
        return len(outgoing)
